"""`netrig top`'s frame from made-up samples: each direction's rate over the last second
against its configured rate, its queue and sojourn, drops by cause and ECN marks since
the lab came up, lateness; busiest first; a sparkline; 80 columns at most."""

from __future__ import annotations

import re

import pytest
from netrig.lab.top import SPARK, Header, Tracker, count, frame, late, ms, rows, si, sparkline, text

PLAN = {"name": "three", "nodes": {"h1": {"kind": "host"}, "h2": {"kind": "host"},
                                   "r1": {"kind": "router"}},
        "links": [{"name": "L1", "a": "h1", "b": "r1", "emulated": True},
                  {"name": "L2", "a": "r1", "b": "h2", "emulated": True},
                  {"name": "L3", "a": "h1", "b": "h2", "emulated": False}]}


def sample(link: str, d: str, t: float, bps: float, **kw) -> dict:
    """A 10 ms sample as netrig-link's subscription sends it (daemon.rs `sample`)."""
    got = bps * 0.01 / 8
    return {"t": round(t, 6), "link": link, "dir": d, "up": True, "delivered_bytes": got,
            "delivered": int(got // 1500), "rate_bps": bps, "queue_packets": 0, "dequeued": 0,
            "sojourn_mean_us": 0.0, "late_p99_us": 0.0} | kw


def stats(**dirs: dict) -> dict:
    """A `stats` answer: 10 Mbit/s on L1 both ways, 1.5 Mbit/s with PIE on L2; extra
    counters per `L1_a_to_b=...`."""
    links = []
    for name, rate in (("L1", 10_000_000), ("L2", 1_500_000)):
        spec = {"rate_bps": rate, "delay_ns": 5_000_000, "queue": {"discipline": "pie"}}
        links.append({"link": name, "up": True, "spec": {"a_to_b": spec, "b_to_a": spec},
                      **{d: dirs.get(f"{name}_{d}", {}) for d in ("a_to_b", "b_to_a")}})
    return {"ok": True, "links": links}


def tracked(seconds: float = 3.0) -> Tracker:
    """L1 h1→r1 at 5 Mbit/s with a queue, L2 h2→r1 at 1.5 Mbit/s (all of it) with
    drops, L1 r1→h1 a trickle, L2 r1→h2 idle; 100 Hz for `seconds`."""
    tr = Tracker(PLAN)
    for i in range(1, int(seconds * 100) + 1):
        t = 10 + i / 100
        tr.add(sample("L1", "a_to_b", t, 5e6, queue_packets=10 + i % 2 * 10, dequeued=4,
                      sojourn_mean_us=6000.0 if i % 2 else 2000.0, late_p99_us=40.0 + i % 7))
        tr.add(sample("L1", "b_to_a", t, 100e3))
        tr.add(sample("L2", "a_to_b", t, 0.0))
        tr.add(sample("L2", "b_to_a", t, 1.5e6, late_p99_us=1500.0 if i == 150 else 20.0))
    tr.stats(stats(L2_b_to_a={"drops_overflow": 3, "drops_aqm": 1234, "lost": 7, "ecn_marks": 56}))
    return tr


def test_rows_busiest_first_with_their_numbers():
    rs = rows(tracked())
    assert [(r.link, r.src, r.dst) for r in rs] == [
        ("L1", "h1", "r1"), ("L2", "h2", "r1"), ("L1", "r1", "h1"), ("L2", "r1", "h2")]
    a, b, c, idle = rs
    assert a.rate_bps == pytest.approx(5e6, rel=1e-6) and a.configured == 10e6
    assert a.queue_packets == pytest.approx(15)  # 10 and 20, alternately
    assert a.sojourn_ms == pytest.approx(4.0)  # 6 and 2 ms over as many packets
    assert a.late_us == 46.0  # the worst window of the last second
    assert b.rate_bps == pytest.approx(1.5e6) and b.configured == 1.5e6
    assert (b.overflow, b.aqm, b.loss, b.ecn) == (3, 1234, 7, 56)
    assert b.late_us == 20.0  # 1.5 ms was at 11.5 s: more than a second before the last sample
    assert c.rate_bps == pytest.approx(100e3)
    assert idle.rate_bps == 0 and idle.spark == [0.0] * 4 and idle.sojourn_ms == 0  # 10 to 13 s


def test_the_rate_is_over_the_last_second_only():
    tr = tracked()
    for i in range(1, 51):  # L2 h2→r1 stops for half a second
        tr.add(sample("L2", "b_to_a", 13 + i / 100, 0.0))
    b = next(r for r in rows(tr) if (r.link, r.src) == ("L2", "h2"))
    assert b.rate_bps == pytest.approx(0.75e6, rel=0.03)


def test_sparkline_a_bar_per_second_scaled_to_the_configured_rate():
    tr = tracked(seconds=12.0)  # more history than the sparkline holds
    a = rows(tr)[0]
    assert len(a.spark) == SPARK and all(f == pytest.approx(0.5) for f in a.spark[:-1])
    assert sparkline(a.spark[:-1]) == "▅" * (SPARK - 1)
    b = next(r for r in rows(tr) if (r.link, r.src) == ("L2", "h2"))
    assert sparkline(b.spark[:-1]) == "█" * (SPARK - 1)
    assert sparkline([0.0, 0.01, 0.5, 1.0, 2.0]) == " ▁▅██"
    assert len(rows(tracked(seconds=2.0))[0].spark) == 3  # no bars before the first sample


def test_units_fit_their_columns():
    assert [si(x) for x in (0, 950e3, 9.516e6, 9.9996e6, 10e6, 123.4e6, 1.5e9)] == \
        ["0", "950k", "9.52M", "10.0M", "10.0M", "123M", "1.50G"]
    assert [si(x, measured=False) for x in (10e6, 1.5e6, 100e6, 2.5e9)] == ["10M", "1.5M", "100M", "2.5G"]
    assert [count(n) for n in (0, 999, 1234, 45_678, 1_234_567)] == ["0", "999", "1.2k", "46k", "1.2M"]
    assert [ms(x) for x in (0, 0.4234, 24.31, 807.2)] == ["0", "0.42", "24.3", "807"]
    assert [late(x) for x in (42.4, 1500)] == ["42µs", "1.5ms"]


def header() -> Header:
    return Header("pf", "three", {"host": 2, "switch": 0, "router": 1}, 3, 2, 4242, "12:03:04")


def table(out: str) -> dict[str, list[str]]:
    return {m.group(1): m.group(2).split() for m in re.finditer(r"^(L\d \w+→\w+)\s+(.*)$", out, re.M)}


def test_the_frame_at_80_columns():
    out = text(frame(header(), rows(tracked(seconds=12.0))))
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 80, out
    assert lines[0].startswith("lab pf (three): 2 hosts, 1 router; 3 links (2 emulated)")
    assert lines[0].endswith("12:03:04") and "netrig-link pid 4242" in lines[1]
    assert lines[2].split() == ["link", "delivered", "%", "queue", "ms", "drop", "o/a/l", "ecn",
                                "late", "rate"]
    got = table(out)
    assert list(got) == ["L1 h1→r1", "L2 h2→r1", "L1 r1→h1", "L2 r1→h2"]  # busiest first
    assert got["L1 h1→r1"][:7] == ["5.00M/10M", "50%", "15p", "4.00", "0/0/0", "0", "46µs"]
    assert got["L2 h2→r1"][:6] == ["1.50M/1.5M", "100%", "0p", "0", "3/1.2k/7", "56"]
    assert got["L1 h1→r1"][7].startswith("▅▅▅")
    assert lines[-1] == "q quits"


def test_a_short_terminal_shows_the_busiest_and_counts_the_rest():
    out = text(frame(header(), rows(tracked()), height=7))
    assert list(table(out)) == ["L1 h1→r1", "L2 h2→r1"]
    assert "… and 2 quieter directions" in out


def test_narrower_than_80_columns_drops_the_sparkline_and_still_fits():
    out = text(frame(header(), rows(tracked()), width=64), width=64)
    assert max(len(x) for x in out.splitlines()) <= 64, out
    assert "rate" not in out.splitlines()[2] and "5.00M/10M" in out


def test_unlimited_trace_and_down_directions():
    tr = tracked()
    answer = stats()
    answer["links"][0]["spec"]["a_to_b"] = {"delay_ns": 0}
    answer["links"][1]["spec"]["b_to_a"] = {"trace": {"path": "lte.trace"}}
    answer["links"][1]["up"] = False
    tr.stats(answer)
    out = text(frame(header(), rows(tr), live=False))
    got = table(out)
    assert got["L1 h1→r1"][0] == "5.00M/-" and got["L1 h1→r1"][1] == "15p"  # no % of nothing
    assert got["L2 h2→r1"][:2] == ["DOWN", "1.50M/trace"]
    assert "q quits" not in out


def test_before_any_sample():
    tr = Tracker(PLAN)
    out = text(frame(header(), rows(tr)))
    assert "no emulated link has sent a sample yet" in out
    tr.stats(stats())
    assert set(table(text(frame(header(), rows(tr))))) == {"L1 h1→r1", "L1 r1→h1", "L2 r1→h2", "L2 h2→r1"}


def test_lines_that_are_not_samples_are_passed_over():
    tr = Tracker(PLAN)
    for line in ({"ok": True, "subscribed": True}, {"event": {}, "link": "L1", "dir": "a_to_b"},
                 {"totals": {"links": []}}):
        tr.add(line)
    assert tr.dirs == {}


def test_after_missed_samples_the_rate_counts_only_what_arrived():
    tr = tracked()
    tr.gap()  # the subscription was opened again: 13.00 to 13.50 s never arrived
    for i in range(51, 101):
        tr.add(sample("L2", "b_to_a", 13 + i / 100, 1.5e6))
    b = next(r for r in rows(tr) if (r.link, r.src) == ("L2", "h2"))
    assert b.rate_bps == pytest.approx(1.5e6)  # not 0.75: the gap is no time at zero


def test_the_command_refuses_an_interval_out_of_bounds_and_a_user_not_root(monkeypatch, capsys):
    from netrig import cli

    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert cli.main(["top", "--interval", "0"]) == 1
    assert "--interval 0: give between 0.05 and 10 seconds" in capsys.readouterr().err
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert cli.main(["top"]) == 2
    assert "netrig top needs root" in capsys.readouterr().err
