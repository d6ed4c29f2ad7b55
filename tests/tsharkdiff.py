"""Comparing netrig-analyze's TCP analysis with tshark's on the same capture file.

tshark runs once per file with every `tcp.analysis.*` field as a column: an FT_NONE
field prints "1" on exactly the frames `-Y tcp.analysis.NAME` matches, so one pass gives
the frame set of every filter. On a difference, the frames that differ are listed with
tshark's own view of them (seq, ack, length, Info) so a failure can be read directly.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

TSHARK = shutil.which("tshark")
BUILD = Path(__file__).resolve().parent / "fixtures" / "pcap" / "build.py"


def builder() -> ModuleType:
    """tests/fixtures/pcap/build.py, the hand-built captures (and their frame builders)."""
    spec = importlib.util.spec_from_file_location("pcap_build", BUILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

# The tcp.analysis fields netrig-analyze reports (its FIELDS table, same order).
FIELDS = (
    "retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
    "duplicate_ack", "zero_window", "lost_segment", "ack_lost_segment", "keep_alive",
    "keep_alive_ack", "window_update", "window_full", "zero_window_probe",
    "zero_window_probe_ack", "reused_ports",
)


def _run(args: list[str], timeout: float = 600) -> str:
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


def tshark_args(pcap: Path) -> list[str]:
    """One tshark pass printing, for every frame with an analysis flag or an ack_rtt, its
    number, each field (1 where present) and the ack_rtt."""
    args = [TSHARK or "tshark", "-n", "-r", str(pcap), "-Y", "tcp.analysis.flags || tcp.analysis.ack_rtt",
            "-T", "fields", "-E", "occurrence=f", "-e", "frame.number"]
    for f in FIELDS:
        args += ["-e", f"tcp.analysis.{f}"]
    return args + ["-e", "tcp.analysis.flags", "-e", "tcp.analysis.ack_rtt"]


def parse_view(text: str) -> tuple[dict[str, set[int]], dict[int, float]]:
    """tshark_args' output as each field's frame set ("flags": any flag) and the ack_rtt
    (s) by frame."""
    sets: dict[str, set[int]] = {f: set() for f in (*FIELDS, "flags")}
    rtt: dict[int, float] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != len(FIELDS) + 3 or not parts[0].isdigit():
            continue
        frame = int(parts[0])
        for name, v in zip((*FIELDS, "flags"), parts[1:]):
            if v:
                sets[name].add(frame)
        if parts[-1]:
            rtt[frame] = float(parts[-1])
    return sets, rtt


def tshark_view(pcap: Path) -> tuple[dict[str, set[int]], dict[int, float]]:
    """tshark's frame set for each field, and its ack_rtt (s) by frame."""
    return parse_view(_run(tshark_args(pcap)))


def tshark_filter(pcap: Path, field: str) -> set[int]:
    """The frames `tshark -Y tcp.analysis.FIELD` matches (the literal form of the check)."""
    out = _run([TSHARK, "-n", "-r", str(pcap), "-Y", f"tcp.analysis.{field}", "-T", "fields",
                "-e", "frame.number"])
    return {int(x) for x in out.split()}


def netrig_view(doc: dict) -> tuple[dict[str, set[int]], dict[int, float]]:
    """The same view from `netrig-analyze tcp --frames` output."""
    sets: dict[str, set[int]] = {f: set() for f in (*FIELDS, "flags")}
    rtt: dict[int, float] = {}
    for s in doc["streams"]:
        for fr in s["frames"]:
            for name in fr["flags"]:
                sets[name].add(fr["frame"])
            if fr["flags"]:
                sets["flags"].add(fr["frame"])
            if "ack_rtt_s" in fr:
                rtt[fr["frame"]] = fr["ack_rtt_s"]
    return sets, rtt


def describe(pcap: Path, frames: set[int]) -> str:
    """tshark's line for each of `frames` (at most 40)."""
    if not frames:
        return ""
    some = sorted(frames)[:40]
    flt = " || ".join(f"frame.number=={f}" for f in some)
    out = _run([TSHARK, "-n", "-r", str(pcap), "-Y", flt, "-T", "fields", "-e", "frame.number",
                "-e", "tcp.stream", "-e", "tcp.seq_raw", "-e", "tcp.ack_raw", "-e", "tcp.len",
                "-e", "_ws.col.Info"])
    return out


def same_rtt(a: float, b: float, n: int = 1) -> bool:
    """Two ack_rtt values (or sums of n) equal to the µs tshark prints, or to the
    precision a double holds at their size (a stamp centuries away is ~1e11 s)."""
    return abs(a - b) <= n * max(1e-6, 4e-16 * max(abs(a), abs(b)))


def frame_differences(pcap: Path, doc: dict) -> dict[str, set[int]]:
    """The frames on which netrig and tshark differ, per field ("flags" for any flag,
    "ack_rtt" for a sample present on one side only or differing by more than 1 µs);
    fields that agree are left out."""
    want_sets, want_rtt = tshark_view(pcap)
    got_sets, got_rtt = netrig_view(doc)
    out = {f: want_sets[f] ^ got_sets[f] for f in (*FIELDS, "flags") if want_sets[f] != got_sets[f]}
    rtt = set(want_rtt) ^ set(got_rtt)
    rtt |= {f for f in set(want_rtt) & set(got_rtt) if not same_rtt(want_rtt[f], got_rtt[f])}
    if rtt:
        out["ack_rtt"] = rtt
    return out


def differences(pcap: Path, doc: dict) -> list[str]:
    """Every way netrig's analysis of `pcap` differs from tshark's; empty if none.

    Frame sets must be equal for every field; ack_rtt must be present on the same frames
    with the same value to 1 µs, so the sample counts and sums agree too."""
    want_sets, want_rtt = tshark_view(pcap)
    got_sets, got_rtt = netrig_view(doc)
    problems = []
    for f in (*FIELDS, "flags"):
        if want_sets[f] != got_sets[f]:
            only_t = want_sets[f] - got_sets[f]
            only_n = got_sets[f] - want_sets[f]
            problems.append(
                f"{pcap.name}: tcp.analysis.{f}: tshark {len(want_sets[f])} frames, netrig "
                f"{len(got_sets[f])}; only tshark {sorted(only_t)[:20]}, only netrig {sorted(only_n)[:20]}\n"
                + describe(pcap, only_t | only_n))
    if set(want_rtt) != set(got_rtt):
        diff = set(want_rtt) ^ set(got_rtt)
        problems.append(f"{pcap.name}: ack_rtt on {len(want_rtt)} frames (tshark) vs {len(got_rtt)} "
                        f"(netrig); differing {sorted(diff)[:20]}\n" + describe(pcap, diff))
    bad = sorted(f for f in set(want_rtt) & set(got_rtt) if not same_rtt(want_rtt[f], got_rtt[f]))
    if bad:
        problems.append(f"{pcap.name}: ack_rtt values differ on {len(bad)} frames, e.g. "
                        + ", ".join(f"{f}: tshark {want_rtt[f]} netrig {got_rtt[f]}" for f in bad[:5]))
    tsum, nsum = sum(want_rtt.values()), sum(got_rtt.values())
    if not same_rtt(tsum, nsum, max(1, len(want_rtt))) or len(want_rtt) != len(got_rtt):
        problems.append(f"{pcap.name}: ack_rtt n/sum: tshark {len(want_rtt)}/{tsum:.6f} s, "
                        f"netrig {len(got_rtt)}/{nsum:.6f} s")
    if doc["totals"]["flagged"] != len(got_sets["flags"]):
        problems.append(f"{pcap.name}: totals.flagged {doc['totals']['flagged']} but {len(got_sets['flags'])} "
                        "flagged frames listed")
    total = doc["totals"]["rtt"]
    if total["n"] != len(got_rtt) or (got_rtt and not same_rtt(total["sum_s"], nsum, len(got_rtt))):
        problems.append(f"{pcap.name}: the RTT summary ({total}) disagrees with the frame list")
    return problems
