"""The web flow without a network: its scenario keys and their errors (FILE:LINE: key),
curl's command lines, reading curl's -w json lines, the summary and series, the nginx
configuration, and theory beside fetch's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netrig.exp.execute import webserver
from netrig.exp.grade import expect
from netrig.exp.grade.expect import expectations
from netrig.exp.kinds import web
from netrig.exp.kinds.registry import Outcome
from netrig.exp.preflight import webtools
from netrig.exp.preflight.checks import preflight
from netrig.exp.spec.model import ScenarioError
from netrig.exp.spec.scenario import loads_scenario

SCENARIO = """\
name: web
topology:
  nodes: {h1: host, s0: switch, h2: host}
  links:
    - [h1, s0]
    - {a: s0, b: h2, rate: 10Mbit, delay: 10ms, queue: 100}
duration: 20s
flows:
  page: {kind: web, from: h1, to: h2, size: 100KB, interval: 2s%s}
"""


@pytest.fixture(autouse=True)
def _tools(monkeypatch):
    """This machine's tools do not matter here: nginx, curl 7.88.1 and openssl are
    "installed" (a test that wants them missing says so)."""
    monkeypatch.setattr(webtools, "find", lambda program: Path(f"/usr/sbin/{program}"))
    monkeypatch.setattr(webtools, "curl_version", lambda: (7, 88, 1))


def flow(extra: str = ""):
    return loads_scenario(SCENARIO % extra, "s.yaml").points[0].spec.flows["page"]


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text, "s.yaml")
    return e.value.problems


def machine_problems(text: str) -> list[str]:
    """What `netrig run` says before anything is built (exp/preflight): the file itself is fine."""
    scen = loads_scenario(text, "s.yaml")
    with pytest.raises(ScenarioError) as e:
        preflight(scen)
    return e.value.problems


# --- keys -----------------------------------------------------------------------------

def test_a_web_flow_defaults_to_http_1_1_new_connections_without_tls():
    f = flow()
    assert (f.kind, f.http, f.new_conn, f.tls, web.object_size(f)) == ("web", "1.1", True, False, 100_000)


@pytest.mark.parametrize("written, version", [("1.1", "1.1"), ('"1.1"', "1.1"), ("2", "2"), ('"2"', "2"),
                                              ("2.0", "2")])
def test_http_takes_1_1_or_2_as_a_number_or_a_string(written, version):
    assert flow(f", http: {written}, tls: true").http == version


def test_a_web_flow_without_to_names_the_file_line_and_flow():
    text = (SCENARIO % "").replace("to: h2, ", "")
    assert problems(text) == ["s.yaml:9: flows.page: a web flow needs to: (its destination)"]


def test_http_3_is_not_a_version_a_web_flow_speaks():
    assert problems(SCENARIO % ", http: 3") == [
        "s.yaml:9: flows.page.http: 3 is not an HTTP version a web flow speaks: 1.1 or 2"]


def test_a_bad_size_names_the_file_line_and_key():
    (p,) = problems((SCENARIO % "").replace("size: 100KB", "size: 100 parsecs"))
    assert p.startswith("s.yaml:9: flows.page.size: ") and "100 parsecs" in p


@pytest.mark.parametrize("size", ["0", "200MB"])
def test_an_object_nginx_would_not_serve_is_refused(size):
    assert problems((SCENARIO % "").replace("size: 100KB", f"size: {size}")) == [
        f"s.yaml:9: flows.page.size: {size} is not an object nginx serves here: from 1 B to 100 MB "
        "(it is written in the lab's directory, in memory)"]


def test_a_key_of_another_kind_is_refused():
    assert problems(SCENARIO % ", cc: cubic") == [
        "s.yaml:9: flows.page.cc: 'cc' does not apply to a web flow (it takes http, interval, "
        "new_conn, size, tls, to)"]


def test_http_and_tls_do_not_apply_to_fetch():
    text = (SCENARIO % ", http: 2").replace("kind: web", "kind: fetch")
    assert problems(text) == [
        "s.yaml:9: flows.page.http: 'http' does not apply to a fetch flow (it takes interval, "
        "new_conn, size, to)"]


def test_keep_alive_over_cleartext_http_2_is_refused_with_curl_before_8():
    assert machine_problems(SCENARIO % ", http: 2, new_conn: false") == [
        "s.yaml:9: flows.page.new_conn: curl 7.88.1 cannot reuse a cleartext HTTP/2 connection "
        "(every fetch after the first fails: curl issue #10634, fixed in 8.0): give tls: true "
        "(HTTP/2 over TLS, as browsers speak it) or new_conn: true"]
    assert flow(", http: 2, new_conn: false, tls: true").tls  # over TLS it reuses


def test_keep_alive_over_cleartext_http_2_is_taken_with_curl_8(monkeypatch):
    monkeypatch.setattr(webtools, "curl_version", lambda: (8, 5, 0))
    assert not flow(", http: 2, new_conn: false").new_conn


def test_a_machine_without_nginx_is_told_the_package_before_anything_is_built(monkeypatch):
    monkeypatch.setattr(webtools, "find", lambda program: None if program == "nginx" else Path("/usr/bin/x"))
    assert machine_problems(SCENARIO % "") == [
        "s.yaml:9: flows.page.kind: a web flow needs nginx (the web server: apt-get install nginx), "
        "which this machine lacks"]


def test_a_machine_without_curl_or_openssl_is_told_which_packages(monkeypatch):
    monkeypatch.setattr(webtools, "find", lambda program: None if program != "nginx" else Path("/x"))
    (p,) = machine_problems(SCENARIO % ", tls: true")
    assert "apt-get install curl" in p and "apt-get install openssl" in p and "nginx" not in p


# --- curl's command line --------------------------------------------------------------

def test_new_connections_run_one_curl_per_fetch_numbered_in_the_url():
    argv = web.curl_argv(Path("/usr/bin/curl"), "http://10.0.0.2:8080/obj-100000.bin", "1.1", False, 30, n=3)
    assert argv[-1] == "http://10.0.0.2:8080/obj-100000.bin?n=3"
    assert "--http1.1" in argv and "--rate" not in argv
    assert argv[argv.index("-w") + 1] == "%{stderr}%{json}\\n" and argv[argv.index("-o") + 1] == "/dev/null"


def test_keep_alive_is_one_curl_globbing_count_fetches_at_the_interval():
    argv = web.curl_argv(Path("/usr/bin/curl"), "https://10.0.0.2:8443/obj-1000.bin", "2", True, 30,
                         count=27, interval=2.0)
    assert argv[-1] == "https://10.0.0.2:8443/obj-1000.bin?n=[1-27]"
    assert argv[argv.index("--rate") + 1] == "43200/d"  # 86 400 000 ms / 43 200 = 2000 ms
    assert {"--http2", "-k", "--tlsv1.3"} <= set(argv) and "--http2-prior-knowledge" not in argv


def test_cleartext_http_2_is_prior_knowledge_on_nginx_s_h2c_port():
    argv = web.curl_argv(Path("/usr/bin/curl"), web.url("10.0.0.2", 5000, "2", False), "2", False, 30)
    assert "--http2-prior-knowledge" in argv and argv[-1].startswith("http://10.0.0.2:8081/obj-5000.bin")


@pytest.mark.parametrize("interval", [0.01, 0.3, 0.7, 2.0, 7.0])
def test_rate_keeps_the_interval_to_the_millisecond(interval):
    ms_per_fetch = 86_400_000 // web.rate_per_day(interval)  # curl's own integer division
    assert abs(ms_per_fetch - interval * 1e3) <= 1


def test_fetch_count_is_the_fetches_that_start_within_the_duration():
    assert [web.fetch_count(d, i) for d, i in ((55, 2), (0.6, 0.2), (1, 5))] == [27, 3, 1]


# --- curl's output --------------------------------------------------------------------

def curl_json(**over) -> str:
    """A curl 7.88 -w '%{json}' line (abridged: the fields read, and some others)."""
    d = {"certs": "", "content_type": "application/octet-stream", "errormsg": None, "exitcode": 0,
         "http_code": 200, "http_version": "1.1", "num_connects": 1, "remote_ip": "10.0.0.2",
         "response_code": 200, "size_download": 100000, "time_appconnect": 0.0, "time_connect": 0.021,
         "time_namelookup": 0.000017, "time_pretransfer": 0.0211, "time_starttransfer": 0.043,
         "time_total": 0.135, "url_effective": "http://10.0.0.2:8080/obj-100000.bin?n=1", "urlnum": 0}
    d.update(over)
    return json.dumps(d)


def kept(*lines: tuple[str, float]) -> str:
    return "".join(web.record(line, end) + "\n" for line, end in lines)


def test_a_fetch_starts_its_total_time_before_its_line_arrived():
    (x,), problems_ = web.parse(kept((curl_json(), 1.0)))
    assert problems_ == [] and x.t == pytest.approx(0.865)
    assert (x.total_s, x.first_byte_s, x.connect_s, x.bytes, x.http_version, x.new_conn) == (
        0.135, 0.043, 0.021, 100000, "1.1", True)


def test_the_summary_counts_failures_with_curl_s_message_and_the_flow_goes_on():
    text = kept((curl_json(time_total=0.1, time_starttransfer=0.04), 0.2),
                (curl_json(num_connects=0, time_connect=0, time_total=0.2, time_starttransfer=0.02), 2.2),
                (curl_json(exitcode=7, response_code=0, size_download=0, num_connects=0, http_version="0",
                           errormsg="Failed to connect to 10.0.0.2 port 8080 after 3 ms: Couldn't connect "
                           "to server"), 4.2),
                (curl_json(response_code=404, size_download=153, num_connects=0), 6.2),
                (curl_json(size_download=99_999, num_connects=0), 8.2))
    fetches, _ = web.parse(text)
    s = web.summary(fetches, 100_000)
    assert (s["fetches"], s["fetches_failed"], s["connections"], s["http_version"]) == (5, 3, 1, "1.1")
    assert s["fetch_s_mean"] == pytest.approx(0.15) and s["fetch_s_std"] == pytest.approx(0.05)
    assert s["fetch_s_p50"] == pytest.approx(0.15) and s["fetch_s_max"] == pytest.approx(0.2)
    assert s["first_byte_s_mean"] == pytest.approx(0.03) and s["first_byte_s_max"] == pytest.approx(0.04)
    assert s["connect_s_mean"] == pytest.approx(0.021)
    assert s["fetch_errors"] == (
        "1× curl (7): Failed to connect to 10.0.0.2 port 8080 after 3 ms: Couldn't connect to server; "
        "1× HTTP 404; 1× got 99999 bytes, not the object's 100000; first at fetch 3")
    rows = web.series(fetches, 5.0, 100_000)
    assert [r["t"] for r in rows] == pytest.approx([5.1, 7.0, 9.065, 11.065, 13.065])
    assert [r.get("fetch_s") for r in rows[:2]] == [0.1, 0.2] and rows[1]["new_conn"] is False
    assert rows[2]["failed"].startswith("curl (7)") and rows[3]["failed"] == "HTTP 404"


def test_what_is_not_curl_s_json_is_said_not_dropped():
    fetches, said = web.parse(kept(("curl: option --rate: is badly used here", 0.01), (curl_json(), 0.5)))
    assert len(fetches) == 1 and said == ["curl said: curl: option --rate: is badly used here"]
    _, bad = web.parse('{"t": 1, "time_total": "fast"}\n')
    assert bad == ["line 1: curl's time_namelookup, time_connect, time_appconnect, time_pretransfer, "
                   "time_starttransfer, time_total, size_download, response_code, num_connects, exitcode "
                   "missing or not numbers; http_version missing or not a string"]


def outcome(text: str, extra: str = "") -> Outcome:
    o = Outcome("page", flow(extra), 3.0, stdout=text)
    o.parse()
    return o


def test_a_flow_whose_every_fetch_failed_is_an_error_saying_why():
    o = outcome(kept((curl_json(exitcode=28, response_code=0, size_download=0,
                                errormsg="Operation timed out after 30001 milliseconds"), 30.0)))
    assert o.error == "no fetch succeeded: curl (28): Operation timed out after 30001 milliseconds"
    assert o.summary()["status"] == "error" and o.summary()["fetches_failed"] == 1


def test_an_outcome_of_a_web_flow_reads_its_lines_once():
    o = outcome(kept((curl_json(), 0.5), (curl_json(num_connects=0), 2.5)))
    s = o.summary()
    assert s["status"] == "ok" and s["fetches"] == 2 and s["connections"] == 1
    assert [r["t"] for r in o.series()] == pytest.approx([3.365, 5.365])


# --- the server -----------------------------------------------------------------------

def test_nginx_serves_h1_and_h2c_and_tls_only_when_asked(tmp_path):
    logs = {"error": "/proc/self/fd/5", "access": "/proc/self/fd/6"}
    plain = webserver.config(tmp_path, tmp_path / "www", logs, tls=False)
    assert "listen 8080;" in plain and "listen 8081 http2;" in plain and "8443" not in plain
    assert "gzip off;" in plain and "sendfile on;" in plain
    assert "access_log /proc/self/fd/6 netrig;" in plain and "error_log /proc/self/fd/5 info;" in plain
    assert "user www-data www-data;" in plain  # the worker is not root
    tls = webserver.config(tmp_path, tmp_path / "www", logs, tls=True)
    assert "listen 8443 ssl http2;" in tls and "ssl_protocols TLSv1.3;" in tls


def test_objects_are_deterministic_and_not_compressible_zeros():
    a, b = webserver.object_bytes(100_000), webserver.object_bytes(100_000)
    assert a == b and len(a) == 100_000 and a.count(0) < 1000


def test_one_server_per_destination_node_with_every_size_it_serves():
    spec = loads_scenario((SCENARIO % "") + "  big: {kind: web, from: h2, to: h1, size: 1MB, tls: true}\n"
                          "  other: {kind: web, from: h1, to: h2, size: 5KB}\n", "s.yaml").points[0].spec
    assert web.servers_needed(spec.flows) == {"h2": ({100_000, 5_000}, False), "h1": ({1_000_000}, True)}


# --- theory ---------------------------------------------------------------------------

def point(extra: str = "", more: str = ""):
    return loads_scenario(SCENARIO % extra + more, "s.yaml").points[0]


def test_fetch_and_web_share_theory_web_adds_http_s_bytes():
    p = point(more="  old: {kind: fetch, from: h1, to: h2, size: 100KB, interval: 2s}\n")
    e = expectations(p)
    assert e["page"].metric == e["old"].metric == "fetch_s_mean"
    # 250 B of HTTP header: a few hundred µs at 10 Mbit/s, nothing more
    assert 0 < e["page"].value - e["old"].value < 300 * 8 / 9e6
    assert e["page"].extra["first_byte_s"] == pytest.approx(2 * e["page"].extra["base_rtt_ms"] / 1e3)


def test_slow_start_until_the_window_holds_the_bdp_then_the_rest_at_the_rate():
    rtt, rate, mss = 0.02, 10e6, 1448
    # the BDP is 25 000 B (17 segments): round 1 carries 10 segments, then the pipe is full
    t, rounds = expect._response_s(100_000, mss, 10, rtt, rate)
    assert rounds == 2 and t == pytest.approx(2 * rtt + (100_000 - 14_480) * 8 / rate)
    # on a fast path the window never fills it: three rounds, the last one's bytes on top
    t, rounds = expect._response_s(100_000, mss, 10, rtt, 1e9)
    assert rounds == 3 and t == pytest.approx(3 * rtt + (100_000 - 43_440) * 8 / 1e9)


def test_keep_alive_saves_the_handshake_and_tls_costs_one_round_trip():
    new, keep = expectations(point()), expectations(point(", new_conn: false"), default_cc="cubic")
    rtt = new["page"].extra["base_rtt_ms"] / 1e3
    n = web.fetch_count(20, 2)
    # a fetch every 2 s idles for several RTOs: Linux's window is back to IW10, so only
    # the handshake is saved, on every fetch after the first
    assert new["page"].value - keep["page"].value == pytest.approx(rtt * (n - 1) / n)
    tls = expectations(point(", tls: true"))
    assert tls["page"].value - new["page"].value == pytest.approx(rtt)


def test_bbr_keeps_its_window_over_the_idle_gap():
    cubic, bbr = (expectations(point(", new_conn: false"), default_cc=cc)["page"] for cc in ("cubic", "bbr"))
    assert "window of 10 segments" in cubic.detail and "RTO" in cubic.detail
    assert "window of 80 segments" in bbr.detail and "kept by bbr" in bbr.detail
    assert bbr.value < cubic.value


def test_keep_alive_fetches_close_together_keep_their_window():
    slow, fast = (expectations(loads_scenario((SCENARIO % ", new_conn: false").replace("interval: 2s", i),
                                              "s.yaml").points[0])["page"] for i in ("interval: 2s", "interval: 250ms"))
    assert "window of 10 segments" in slow.detail and "window of 80 segments" in fast.detail
    assert fast.value < slow.value


def test_a_web_flow_beside_a_bulk_flow_expects_a_range_up_to_the_full_queue():
    e = expectations(point(more="  bulk: {kind: tcp, from: h1, to: h2}\n"))["page"]
    assert e.limit == "loaded path" and e.hi > 2 * e.value
