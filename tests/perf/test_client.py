"""netrig-perf's client: its own modes and outputs, and errors a person can act on."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import pytest
from conftest import free_port, run_json

pytestmark = pytest.mark.net  # servers and clients on loopback


def run(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def assert_delivered(end: dict) -> None:
    """A TCP test of a second or more on loopback moved at least a megabyte, and the
    receiver counted no more than the sender sent."""
    received, sent = end["sum_received"]["bytes"], end["sum_sent"]["bytes"]
    assert 1_000_000 <= received <= sent, (received, sent)


def test_text_output_reads_like_iperf3(perf_bin, netrig_server):
    srv = netrig_server()
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "2", "-i", "0.5"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert f"Connecting to host 127.0.0.1, port {srv.port}" in out
    assert "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd" in out
    assert "  0.00-0.50   sec" in out and "  1.50-2.00   sec" in out
    assert out.count(" sender") == 1 and out.count(" receiver") == 1
    assert out.rstrip().endswith("iperf Done.")


def test_unreachable_server_is_a_clear_error(perf_bin):
    port = free_port()
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(port), "-t", "1"])
    assert p.returncode == 1
    assert "unable to connect to server" in p.stderr and "refused" in p.stderr.lower()
    assert "panicked" not in p.stderr


def test_unknown_host_is_named(perf_bin):
    p = run([str(perf_bin), "-c", "no-such-host.invalid", "-t", "1"])
    assert p.returncode == 1
    assert "no-such-host.invalid" in p.stderr


def silent_listener(behaviour: bytes | None):
    """A TCP server that accepts one client, optionally says `behaviour`, then idles."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()
    port = ls.getsockname()[1]

    def serve():
        c, _ = ls.accept()
        c.recv(37)
        if behaviour:
            c.sendall(behaviour)
        c.settimeout(5)
        try:
            c.recv(1)
        except OSError:
            pass
        c.close()
        ls.close()

    threading.Thread(target=serve, daemon=True).start()
    return port


def test_a_server_that_never_answers_times_out(perf_bin):
    port = silent_listener(None)
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(port), "-t", "1", "--connect-timeout", "700"])
    assert p.returncode == 1
    assert "timed out" in p.stderr and "parameter request" in p.stderr


def test_a_peer_speaking_another_protocol_is_named(perf_bin):
    port = silent_listener(b"HTTP/1.1 400 Bad Request\r\n")
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(port), "-t", "1", "--connect-timeout", "2000"])
    assert p.returncode == 1
    assert "unknown control state byte" in p.stderr


def test_json_errors_are_documents(perf_bin):
    port = free_port()
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(port), "-t", "1", "-J"])
    assert p.returncode == 1
    assert "unable to connect" in doc["error"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["-P", "0"], "-P"),
        (["-u", "-l", "70000"], "65507"),
        (["-b", "10Q"], "-b"),
        (["-n", "lots"], "-n"),
        (["-R", "--bidir"], "exclude"),
        (["-i", "0.01"], "interval"),
        (["--probe", "--probe-size", "10"], "probe-size"),
    ],
)
def test_bad_options_are_refused_before_connecting(perf_bin, args, words):
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", "1", *args])
    assert p.returncode != 0
    assert words in p.stderr, p.stderr


def test_shared_key_authentication(perf_bin, netrig_server):
    srv = netrig_server("--auth-key", "s3cret")
    base = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1"]
    p = run(base)
    assert p.returncode == 1 and "authentication failed" in p.stderr and "requires a key" in p.stderr
    p = run(base + ["--auth-key", "wrong"])
    assert p.returncode == 1 and "wrong key" in p.stderr
    p = run(base + ["--auth-key", "s3cret"])
    assert p.returncode == 0, p.stderr


def test_json_stream_has_start_intervals_end_and_tcp_info(perf_bin, netrig_server):
    srv = netrig_server()
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "-i", "0.2",
             "--json-stream", "--tcp-info-interval", "10", "-b", "50M"])
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert kinds.count("interval") == 5
    info = [e["data"] for e in events if e["event"] == "tcp_info"]
    # 10 ms samples over 1 s: about 100 (a loaded machine may skip a few).
    assert len(info) >= 60, len(info)
    # a loopback RTT: more than nothing, far less than a second (a unit slip shows)
    assert all(d["snd_cwnd"] > 0 and 0 < d["rtt_us"] < 1_000_000 for d in info), info[:3]
    assert info[-1]["t"] > info[0]["t"]


def test_omit_leaves_the_warm_up_out(perf_bin, netrig_server):
    srv = netrig_server()
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "1", "-O", "1", "-b", "40M"])
    assert p.returncode == 0, p.stderr
    omitted = [i for i in doc["intervals"] if i["sum"]["omitted"]]
    assert len(omitted) == 1
    end = doc["end"]["sum_sent"]
    assert 0.9 < end["seconds"] < 1.2
    assert 0.9 * 40e6 < end["bits_per_second"] < 1.1 * 40e6


def test_probe_reports_rtt_one_way_delays_and_loss(perf_bin, netrig_server):
    srv = netrig_server()
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "2",
                       "--probe", "--probe-interval", "5", "--probe-size", "100"])
    assert p.returncode == 0, p.stderr
    probe = doc["end"]["probe"]
    assert 380 <= probe["sent"] <= 420 and probe["lost"] == 0
    rtt = probe["rtt_ms"]
    assert 0 < rtt["p50"] <= rtt["p90"] <= rtt["p99"] <= rtt["max"] < 50
    # One machine, one clock: the one-way delays add up to about the RTT.
    one_way = probe["send_delay_ms"]["p50"] + probe["receive_delay_ms"]["p50"]
    assert 0 < one_way < 5 * rtt["p50"] + 0.05
    assert len(probe["samples"]) == probe["sent"]
    assert len(doc["intervals"]) == 2


def test_probe_runs_beside_a_bulk_test(perf_bin, netrig_server):
    srv = netrig_server()
    bulk = subprocess.Popen([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "3", "-P", "2"],
                            stdout=subprocess.DEVNULL)
    try:
        p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "2", "--probe"])
        assert p.returncode == 0, p.stderr
        assert doc["end"]["probe"]["received"] > 150
    finally:
        assert bulk.wait(timeout=20) == 0


@pytest.mark.parametrize("new_conn", [False, True])
def test_request_response_times_transactions(perf_bin, netrig_server, new_conn):
    srv = netrig_server()
    args = [str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "1", "--rr", "100K", "--rr-interval", "20"]
    if new_conn:
        args.append("--rr-new-conn")
    p, doc = run_json(args)
    assert p.returncode == 0, p.stderr
    rr = doc["end"]["rr"]
    # One start every 20 ms for a second.
    assert 40 <= rr["transactions"] <= 51 and rr["failed"] == 0
    assert rr["response_bytes"] == 100 * 1024
    assert 0 < rr["time_ms"]["p50"] < 20
    assert rr["new_connection"] is new_conn


def test_logfile_receives_the_output(perf_bin, netrig_server, tmp_path):
    srv = netrig_server()
    log = tmp_path / "client.log"
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "--logfile", str(log)])
    assert p.returncode == 0 and p.stdout == ""
    assert "iperf Done." in log.read_text()


def test_netrig_perf_runs_through_the_netrig_command(netrig_server):
    srv = netrig_server()
    p = run([sys.executable, "-m", "netrig", "perf", "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "-J"])
    assert p.returncode == 0, p.stderr
    assert_delivered(json.loads(p.stdout)["end"])
    p = run([sys.executable, "-m", "netrig", "perf", "-c"])
    assert p.returncode == 2, (p.returncode, p.stderr)  # clap's usage error, passed through


def available_cc() -> list[str]:
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        return f.read().split()


def test_tcp_options_reach_the_sockets(perf_bin, netrig_server):
    srv = netrig_server()
    algo = "reno" if "reno" in available_cc() else available_cc()[0]
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "-C", algo, "-M", "1000", "-N",
             "-Z", "--json-stream", "--tcp-info-interval", "50"])
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    end = events[-1]["data"]
    assert end["sender_tcp_congestion"] == algo
    mss = {e["data"]["snd_mss"] for e in events if e["event"] == "tcp_info"}
    assert mss and max(mss) <= 1000, mss
    assert_delivered(end)


def test_unknown_congestion_control_is_named(perf_bin, netrig_server):
    srv = netrig_server()
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "-C", "warp9"])
    assert p.returncode == 1
    assert "warp9" in p.stderr


def test_block_count_and_one_off_server(perf_bin, netrig_server):
    srv = netrig_server("-1")
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-k", "100", "-l", "8K"])
    assert p.returncode == 0, p.stderr
    assert doc["end"]["sum_sent"]["bytes"] == 100 * 8192
    srv.proc.wait(timeout=10)
    assert srv.proc.returncode == 0


def test_ipv6_and_bind(perf_bin, netrig_server):
    srv = netrig_server()
    p, doc = run_json([str(perf_bin), "-c", "::1", "-6", "-B", "::1", "-p", str(srv.port), "-J", "-t", "1"])
    assert p.returncode == 0, p.stderr
    assert doc["start"]["connected"][0]["local_host"] == "::1"


def test_server_output_between_netrig_peers(perf_bin, netrig_server):
    srv = netrig_server()
    p = run([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-t", "1", "--get-server-output"])
    assert p.returncode == 0, p.stderr
    assert "Server output:" in p.stdout and "Accepted connection from" in p.stdout


def test_udp_summary_counts_what_never_arrived(perf_bin, netrig_server):
    """The end summary's loss is sent minus received, including datagrams still in
    flight when the test ended (iperf3 counts only gaps below the highest received)."""
    srv = netrig_server()
    p, doc = run_json([str(perf_bin), "-c", "127.0.0.1", "-p", str(srv.port), "-J", "-t", "1", "-u", "-b", "20M"])
    assert p.returncode == 0, p.stderr
    end = doc["end"]
    s, sent, rcvd = end["sum"], end["sum_sent"], end["sum_received"]
    size = doc["start"]["test_start"]["blksize"]
    assert s["packets"] == sent["packets"] == sent["bytes"] // size
    # Every datagram sent is either received or lost: none falls through the cracks.
    assert s["packets"] - s["lost_packets"] == rcvd["bytes"] // size
    assert s["bytes"] == sent["bytes"] and rcvd["sender"] is False and sent["sender"] is True
