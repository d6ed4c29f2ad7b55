"""The tcp and udp kinds: bulk flows, made by their `tool:` (netrig-perf by default,
iperf3 or iperf2: registry.TOOLS), read from the iperf3-shaped document each tool's
parser leaves (`FlowOutput.doc`: netrig-perf's and iperf3's -J, iperf2's output turned
into that shape), so that every tool's flow has the same summary keys and series rows.

summary  throughput_bps (what the receiver counted), sent_bps, bytes, seconds; tcp:
         retransmits, retrans_pct, rtt_ms_mean, window_bytes, the buffers -w became;
         udp: loss_pct, jitter_ms, packets; a paced sender's schedule (netrig-perf)
series   {"t", "bps"} per interval of the client ("recv_bps" when it received: -R;
         "retransmits", "loss_pct", "jitter_ms" when given), {"t", "recv_bps"} per
         interval of the server, and netrig-perf's TCP_INFO samples ({"t", "cwnd_bytes",
         "rtt_ms", "socket"})
"""

from __future__ import annotations

import statistics
from typing import Any

from netrig.exp.kinds import perfjson
from netrig.exp.kinds.base import FlowOutput, connect_timeout_s

# What a tcp/udp flow's failure says when it is a time-out: nothing came back in time,
# or the neighbour could not be resolved (ARP's requests lost too), for its connection,
# its setup or its data (not a refusal, a usage or a program error).
_TIMED_OUT = ("timed out", "no route to host", "peer closed the control connection",
              "did not finish within", "idle timeout", "connection reset")


def summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    out.update(_bulk(o))
    if why := timed_out(o, out):
        # a clear row: no data, and why (not a program's failure)
        out.update({"status": "timed_out", "error": why,
                    "connected": not why.startswith("never connected")})
        for key in ("throughput_bps", "bytes"):
            out[key] = out.get(key) or 0
    elif out["status"] == "ok":
        out["connected"] = True
    return out


def timed_out(o: FlowOutput, measured: dict[str, Any]) -> str | None:
    """Why a tcp or udp flow is a time-out: it never connected (its client could not
    connect within its connect timeout, or no route: the neighbour could not be
    resolved), its setup or its end did not get through in time, or it moved no data;
    None when it is not one (it moved data, or failed otherwise)."""
    err = o.error or ""
    if err and not any(w in err.lower() for w in _TIMED_OUT):
        return None  # a failure of another kind: an error, not a time-out
    got = measured.get("bytes") or 0
    if not err:
        return None if got or not o.doc else "moved no data: the receiver counted 0 bytes"
    if "unable to connect" in err.lower():
        return f"never connected within its {connect_timeout_s(o.spec):g} s connect timeout ({err})"
    return None if got else f"moved no data ({err})"


def _bulk(o: FlowOutput) -> dict[str, Any]:
    e = o.end
    if not e:
        return {}
    rcv = e.get("sum_received") or e.get("sum") or {}
    snd = e.get("sum_sent") or e.get("sum") or {}
    out: dict[str, Any] = {"throughput_bps": rcv.get("bits_per_second"),
                           "sent_bps": snd.get("bits_per_second"),
                           "bytes": rcv.get("bytes"), "seconds": rcv.get("seconds")}
    out.update(perfjson.pacing_summary(o.doc or {}, snd.get("bytes") or 0))
    if o.spec.kind == "tcp":
        retr = snd.get("retransmits")
        out["retransmits"] = retr
        mss = _mss(o)
        segs = (snd.get("bytes") or 0) / mss if mss else 0
        out["retrans_pct"] = 100.0 * retr / segs if retr is not None and segs else None
        rtts = [s["sender"].get("mean_rtt") for s in e.get("streams", [])
                if isinstance(s.get("sender"), dict) and s["sender"].get("mean_rtt")]
        out["rtt_ms_mean"] = statistics.fmean(rtts) / 1e3 if rtts else None
        out["window_bytes"] = advertised_window(o)
        start = (o.doc or {}).get("start") or {}
        for key, col in (("sndbuf_actual", "sndbuf_bytes"), ("rcvbuf_actual", "rcvbuf_bytes")):
            if isinstance(start.get(key), (int, float)) and start[key] > 0:
                out[col] = start[key]  # what the kernel made of -w (SO_SNDBUF, SO_RCVBUF read back)
    else:
        s = e.get("sum") or {}
        # The receiver's own time runs to the TEST_END message, which crosses the same
        # full queues (and can be lost there, costing an RTO): the rate the datagrams
        # came out of the path is what arrived over the time they were being sent.
        sent_s = snd.get("seconds")
        if rcv.get("bytes") is not None and sent_s:
            out["throughput_bps"] = rcv["bytes"] * 8 / sent_s
            out["receiver_seconds"] = rcv.get("seconds")
        out.update({"loss_pct": rcv.get("lost_percent", s.get("lost_percent")),
                    "jitter_ms": rcv.get("jitter_ms", s.get("jitter_ms")),
                    "packets": rcv.get("packets", s.get("packets"))})
    return out


def advertised_window(o: FlowOutput) -> float | None:
    """The window the receiver advertised, as the sender saw it (median of its
    TCP_INFO snd_wnd after the first second, and after `omit`): what `-w` became in
    the kernel, or how far autotuning grew it. None without TCP_INFO samples
    (netrig-perf's only)."""
    if o.spec.kind != "tcp" or o.spec.reverse:
        return None
    xs = [(x.t, x.snd_wnd) for x in perfjson.tcp_info(o.doc or {}) if x.sender and x.snd_wnd]
    after = max(1.0, o.spec.seconds("omit"))
    late = [w for t, w in xs if t >= after] or [w for _, w in xs]
    return float(statistics.median(late)) if late else None


def _mss(o: FlowOutput) -> float:
    for x in perfjson.tcp_info(o.doc or {}):
        if x.snd_mss:
            return float(min(x.snd_mss, 1448))
    return 1448.0


def series(o: FlowOutput) -> list[dict[str, Any]]:
    """Samples: {"t": s from the run's start, ...} in time order."""
    t0 = o.start_s
    out: list[dict[str, Any]] = []
    if not o.doc:
        return out
    # As iperf3's, netrig-perf's clock starts again after -O's omitted seconds: the
    # intervals (and TCP_INFO samples) after them are shifted by the omitted time.
    mine = omitted_s(o.doc.get("intervals", []))
    for iv in o.doc.get("intervals", []):
        s = iv.get("sum") or {}
        if s.get("omitted"):
            continue
        row = {"t": t0 + mine + s.get("end", 0), "bps": s.get("bits_per_second")}
        if s.get("sender") is False:  # -R: the client received
            row["recv_bps"] = s.get("bits_per_second")
        for key, col in (("retransmits", "retransmits"), ("lost_percent", "loss_pct"),
                         ("jitter_ms", "jitter_ms")):
            if key in s:
                row[col] = s[key]
        out.append(row)
    # The server's intervals (with --get-server-output and a -J server): what
    # the receiver counted, not what was written into the socket.
    theirs = o.doc.get("server_output_json") or {}
    ivs = theirs.get("intervals", []) if isinstance(theirs, dict) else []
    shift = omitted_s(ivs)
    for iv in ivs:
        s = iv.get("sum") or {}
        if not s.get("omitted") and s.get("sender") is False and s.get("end") is not None:
            out.append({"t": t0 + shift + s["end"], "recv_bps": s.get("bits_per_second")})
    after, last = False, -1.0  # a sample's t going back: the clock restarted after -O
    for x in perfjson.tcp_info(o.doc):
        after = after or x.t < last - 1e-6
        last = x.t
        out.append({"t": t0 + x.t + (mine if after else 0.0),
                    "cwnd_bytes": x.snd_cwnd if x.snd_cwnd_bytes is None else x.snd_cwnd_bytes,
                    "rtt_ms": (x.rtt_us or 0) / 1e3, "socket": x.socket})
    out.sort(key=lambda r: r["t"])
    return out


def omitted_s(intervals: list[dict[str, Any]]) -> float:
    """How long -O's omitted intervals lasted (their last end), 0 without any."""
    ends = [(iv.get("sum") or {}).get("end") or 0.0 for iv in intervals
            if isinstance(iv, dict) and (iv.get("sum") or {}).get("omitted")]
    return float(max(ends, default=0.0))
