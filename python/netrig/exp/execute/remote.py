"""One run of a scenario on real machines reached over SSH (`hosts:` instead of
`topology:`).

The steps, each failing with a HostError that names the host, the step and what to do:
connect and authenticate (one ControlMaster per host, remote/ssh.py); look at the host
(kernel, CPU, the netrig-perf it has: `perf:`, its PATH, or a copy netrig left in
~/.cache/netrig); copy netrig-perf there when it has none and its machine is this
one's; measure the idle path (3 s of ping from each flow's source to its destination
and back, recorded beside the declared RTT); start a one-off netrig-perf server per
flow (its PID recorded); run the flows at their times; collect their output; stop every
process still running by its PID, whatever happened.

Each flow's server serves only its flow (exp/kinds/base.py): bound to the address the flow
is sent to, ended by itself at the flow's end plus a grace, and keyed with a fresh
random key that travels to the server and its client on ssh's standard input and into
their environment, never on a command line (the local ssh's, or the remote shell's).
A netrig-perf netrig copied to a host is used only while its SHA-256 is this build's:
checked at each run, copied again when it is not.

The run's files are written as a local run writes them (runner._write_run: flows/,
series/, run.json last), so `netrig report`, `--resume`, `compare` and the CSV read
them unchanged; run.json adds `remote`: the hosts as each described itself, the path
declared, the clocks and the idle measurement. A host that fails marks the run failed
with the reason; the campaign goes on. Theory reads the declared path (remote/hosts.py).
One-way delays (probe flows) are in a flow's summary only with `clocks: synced`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrig import safefs, units
from netrig._bins import binary
from netrig.errors import NetrigError
from netrig.exp.execute import recorder
from netrig.exp.grade.expect import expectations
from netrig.exp.kinds import ping
from netrig.exp.kinds.base import (
    KEY_ENV,
    Call,
    connect_timeout_s,
    flow_key,
    run_process,
    server_lifetime_s,
    wait_for_flows,
)
from netrig.exp.kinds.registry import Outcome, kind_of, tool_of
from netrig.exp.record import files as rec
from netrig.exp.record.run import write_run
from netrig.exp.spec.model import Point
from netrig.procs import end as end_process
from netrig.remote.ssh import SSH_FAILED, Host, HostError, classify, quote
from netrig.theory import analyse
from netrig.topo.plan import make_plan

BASE_PORT = 5301  # as a local run's: flow i's server listens on BASE_PORT + i
IDLE_S = 3.0  # the idle measurement: this long of ping, 5 a second, each way
CACHE = ".cache/netrig"  # where a copied netrig-perf is kept on a host (below its home)
_PID = re.compile(r"^netrig-pid (\d+)$", re.M)
_RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


@dataclass
class RemoteOutcome(Outcome):
    """A flow on a real host: with synced clocks a probe's one-way delays are measured
    (netrig-perf stamps each packet with the sender's and the receiver's clock)."""

    synced: bool = False
    host_error: HostError | None = None  # its host failed (ssh itself, status 255)

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        if self.synced and self.spec.kind == "probe" and self.doc:
            p = self.end.get("probe") or {}
            for key, col in (("send_delay_ms", "owd_up_ms"), ("receive_delay_ms", "owd_down_ms")):
                s = p.get(key) or {}
                out[f"{col}_p50"], out[f"{col}_p99"] = s.get("p50"), s.get("p99")
        return out


def run_one(point: Point, rep: int, seed: int, out: Path, rid: str, tick=None) -> dict[str, Any]:
    """One run of one point on the scenario's hosts; writes out/runs/rid as a local run
    does (exp/execute/recorder.py; run.json last, once, with what the hosts said) and
    returns run.json's content."""
    assert point.hosts is not None
    rdir = recorder.fresh(out, rid)
    plan = make_plan(point.topology)
    spec = point.spec
    interval = units.seconds(spec.interval)
    synced = spec.clocks == "synced"
    used = [h for h in point.hosts if any(h in (f.src, f.to) for f in spec.flows.values())]
    hosts = {h: Host(h, point.hosts[h]) for h in used}
    started_wall = time.time()
    facts: dict[str, dict[str, Any]] = {}
    idle: list[dict[str, Any]] = []
    outcomes: dict[str, Outcome] = {}
    pids: dict[str, list[tuple[int, str]]] = {h: [] for h in hosts}  # remote processes to stop
    servers: list[tuple[str, str, Any]] = []  # (flow, host, local ssh process)
    failure: HostError | None = None
    interrupted = False
    errors: list[str] = []
    send_buffers: dict[str, float] = {}
    try:
        for h in hosts.values():
            h.open()  # connect, authenticate
            facts[h.name] = _look(h)
        for h in hosts.values():
            facts[h.name]["perf"] = _perf(h, facts[h.name])
        for name, f in spec.flows.items():
            if f.kind == "tcp" and f.window is None and f.to is not None:
                wmem = facts[f.to if f.reverse else f.src].get("tcp_wmem_max")
                if wmem:
                    send_buffers[name] = wmem
        idle = _idle(hosts, point)
        ports: dict[str, int] = {}
        keys: dict[str, str] = {}
        for i, (name, f) in enumerate(spec.flows.items()):
            if kind_of(f).served and f.count:
                ports[name], keys[name] = BASE_PORT + i, flow_key()
                bind = point.hosts[f.to].to_address
                argv = [facts[f.to]["perf"], *tool_of(f).server(
                    Call(f, bind, ports[name], point.flow_duration(f), interval), bind, connect_timeout_s(f),
                    server_lifetime_s(f, _client_timeout_s(point, f, hosts)))[1:]]
                servers.append((name, f.to, _start_server(hosts[f.to], argv, out, rid, name, keys[name])))
        for name, _, proc in servers:
            _wait_listening(hosts[spec.flows[name].to], rdir, name, ports[name], pids, proc)
        stop = threading.Event()
        t0 = time.monotonic()
        threads = []
        for name, f in spec.flows.items():
            o = RemoteOutcome(name, f, f.seconds("start"), synced=synced)
            o.planned_s = point.flow_duration(f)
            outcomes[name] = o
            threads.append(threading.Thread(target=_flow, daemon=True, args=(
                hosts, point, o, facts, ports.get(name), keys.get(name), interval, t0, stop, pids)))
        for t in threads:
            t.start()
        limit = point.length_s + 30 + max(h.spec.connect_timeout_s for h in hosts.values())
        interrupted = wait_for_flows(threads, t0, limit, stop, tick, point.length_s)
        stop.set()
        failure = next((o.host_error for o in outcomes.values()
                        if isinstance(o, RemoteOutcome) and o.host_error), None)
    except HostError as e:
        failure = e
    finally:
        errors = _stop_all(hosts, pids, servers)
        for h in hosts.values():
            h.close()
    if failure is None:
        failure = _collect(servers, rdir, hosts)
    seen = {n: w for n, o in outcomes.items() if (w := o.advertised_window()) is not None}
    bufs = {n: (s["sndbuf_bytes"], s["rcvbuf_bytes"]) for n, o in outcomes.items() if o.spec.window is not None
            and "sndbuf_bytes" in (s := o.summary()) and "rcvbuf_bytes" in s}
    expected = expectations(point, plan, seen, send_buffers, None, bufs)
    status = "failed" if failure else "interrupted" if interrupted else "ok"
    record = recorder.build(out, rid, point, rep, seed, outcomes, expected, [], started_wall, status, errors)
    record.sections["remote"] = {
        "hosts": {h: {**_declared(point, h), **facts.get(h, {})} for h in used},
        "path": spec.path.model_dump() if spec.path else None, "clocks": spec.clocks,
        "idle": idle, "theory_rtt_ms": _theory_rtts(plan, idle)}
    if failure is not None:
        record.sections["error"] = str(failure)
        record.sections["remote"]["failed"] = {"host": failure.host, "step": failure.step}
    doc = write_run(out, record)
    if interrupted:
        raise KeyboardInterrupt
    return doc


def _declared(point: Point, name: str) -> dict[str, Any]:
    s = point.hosts[name] if point.hosts else None
    return {} if s is None else {"ssh": s.label(), "address": s.to_address}


def _look(h: Host) -> dict[str, Any]:
    """What the host says of itself (kernel, machine, CPU, TCP's buffers) and which
    netrig-perf it has: `perf:`, else its PATH's, else one netrig copied before."""
    given = h.spec.perf
    cached = f'"$HOME"/{CACHE}/{_cache_name()}'
    lines = [
        'echo "kernel=$(uname -sr)"', 'echo "machine=$(uname -m)"',
        "echo \"cpu=$(grep -m1 -i 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')\"",
        'echo "cpus=$(nproc 2>/dev/null)"', 'echo "hostname=$(uname -n)"',
        'echo "tcp_wmem=$(cat /proc/sys/net/ipv4/tcp_wmem 2>/dev/null)"',
        'echo "tcp_congestion_control_default=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)"',
        'echo "ping=$(command -v ping)"', 'echo "home=$HOME"',
    ]
    if given:
        lines.append(f'p={_remote_path(given)}; [ -x "$p" ] && echo "perf=$p" && ok=1')
    else:
        # A copy netrig left there runs (even for --version) only if its SHA-256 is this
        # build's; _perf copies it again when it is not.
        lines.append(f'p=$(command -v netrig-perf) && echo "perf=$p" && ok=1 || {{ p={cached}; '
                     f'if [ -x "$p" ]; then echo "perf=$p"; echo "perf_copied=yes"; '
                     f'd=$(sha256sum < "$p" 2>/dev/null | cut -d" " -f1); echo "perf_sha256=$d"; '
                     f'[ "$d" = {_local_digest()} ] && ok=1; fi; }}')
    lines.append('[ -n "$ok" ] && echo "perf_version=$("$p" --version 2>&1 | head -1)"')
    lines.append("true")
    done = h.run(quote(["sh", "-c", "\n".join(lines)]), h.spec.connect_timeout_s + 10, "look at the host")
    facts: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        k, eq, v = line.partition("=")
        if eq:
            facts[k.strip()] = v.strip()
    try:
        facts["tcp_wmem_max"] = float(facts.get("tcp_wmem", "").split()[2])
    except (IndexError, ValueError):
        pass
    if given and "perf" not in facts:
        raise HostError(h.name, h.spec, "find netrig-perf", f"perf: {given} is not an executable file there",
                        f"install netrig-perf on {h.name} at that path, or leave perf: out (netrig then "
                        "uses its PATH's, or copies one)")
    return facts


def _remote_path(p: str) -> str:
    """A path for the remote shell: ~/ is the remote home; the rest quoted."""
    if p.startswith("~/"):
        return '"$HOME"/' + shlex.quote(p[2:])
    return shlex.quote(p)


_HASH: dict[tuple[str, int, int], str] = {}


def _local_digest() -> str:
    """This machine's netrig-perf's SHA-256 (hex), read again when the file changes."""
    local = binary("netrig-perf")
    st = local.stat()
    key = (str(local), st.st_mtime_ns, st.st_size)
    if key not in _HASH:
        _HASH[key] = hashlib.sha256(local.read_bytes()).hexdigest()
    return _HASH[key]


def _cache_name() -> str:
    """The copied binary's name on a host: netrig-perf-<its first 12 hex of SHA-256>,
    so that a host keeps the copy of exactly this build."""
    return f"netrig-perf-{_local_digest()[:12]}"


def _perf(h: Host, facts: dict[str, Any]) -> str:
    """The path of netrig-perf on the host: the one it has, or this machine's copied
    into ~/.cache/netrig there (only onto the same machine architecture). A copy netrig
    left there is used only if its SHA-256 is this build's; else it is copied again."""
    if facts.get("perf_copied") == "yes" and facts.get("perf_sha256") != _local_digest():
        was = facts.pop("perf_sha256", "") or "unknown (no sha256sum there)"
        facts["perf_recopied"] = (f"{facts.pop('perf')}'s SHA-256 was {was[:16]}, not this build's "
                                  f"{_local_digest()[:16]}: copied again")
        facts.pop("perf_copied")
        facts.pop("perf_version", None)
    if facts.get("perf"):
        if not facts.get("perf_version", "").startswith("netrig-perf"):
            raise HostError(h.name, h.spec, "find netrig-perf",
                            f"{facts['perf']} --version said {facts.get('perf_version', '')[:200]!r}",
                            f"install netrig-perf on {h.name} (a build for its machine, {facts.get('machine')})")
        return str(facts["perf"])
    mine = os.uname().machine
    if facts.get("machine") != mine:
        raise HostError(h.name, h.spec, "copy netrig-perf",
                        f"{h.name} has no netrig-perf, and it is a {facts.get('machine') or 'unknown'} "
                        f"machine where this one's netrig-perf is built for {mine}",
                        f"install netrig-perf on {h.name} (cargo build --release -p netrig-bin there) and "
                        "put it on its PATH, or give perf: its path")
    home = facts.get("home") or "."
    cache, name = f"{home}/{CACHE}", _cache_name()
    tmp, dest = f"{cache}/{name}.tmp{os.getpid()}", f"{cache}/{name}"
    h.run(quote(["mkdir", "-p", cache]), h.spec.connect_timeout_s + 10, "copy netrig-perf")
    h.copy(binary("netrig-perf"), tmp, h.spec.connect_timeout_s + 60)
    # The copy takes its name only once its SHA-256 is this build's.
    check = ('chmod 755 "$1" || exit 1; d=$(sha256sum < "$1" 2>/dev/null | cut -d" " -f1); '
             '[ -n "$d" ] || { rm -f "$1"; exit 4; }; [ "$d" = "$3" ] || { rm -f "$1"; echo "$d"; exit 3; }; '
             'mv -f "$1" "$2" && "$2" --version')
    done = h.run(quote(["sh", "-c", check, "sh", tmp, dest, _local_digest()]),
                 h.spec.connect_timeout_s + 10, "copy netrig-perf")
    if done.code in (3, 4):
        said = (f"the copy's SHA-256 there is {done.stdout.strip()[:64]}, not this build's {_local_digest()}"
                if done.code == 3 else "sha256sum is not there, so the copy cannot be checked")
        raise HostError(h.name, h.spec, "copy netrig-perf", said,
                        f"install coreutils on {h.name}, or netrig-perf on its PATH (or give perf: its path)"
                        if done.code == 4 else f"is {h.name}'s disk or {home}/{CACHE} sound? (nothing ran: "
                        "install netrig-perf there, or give perf: its path)")
    if done.code != 0 or not done.stdout.startswith("netrig-perf"):
        raise HostError(h.name, h.spec, "copy netrig-perf",
                        f"the copied netrig-perf does not run there: {(done.stdout + done.stderr).strip()[-200:]}",
                        f"install netrig-perf on {h.name} (a build for its system) and put it on its PATH")
    facts["perf_copied"] = "yes"
    facts["perf_version"] = done.stdout.strip().splitlines()[0]
    return dest


NO_KEY = 97  # a keyed command's exit status when its key did not come on its stdin


def _pid_wrapped(argv: list[str], keyed: bool = False) -> str:
    """A remote command line that says its PID on stderr first ("netrig-pid N"), so the
    process can be stopped by it; `keyed`: it reads the flow's key, one line on its
    standard input, into its environment first (not on any command line)."""
    script = 'echo "netrig-pid $$" >&2; exec "$@"'
    if keyed:
        script = (f'echo "netrig-pid $$" >&2; IFS= read -r {KEY_ENV} || {{ echo "netrig: no key on '
                  f'standard input" >&2; exit {NO_KEY}; }}; export {KEY_ENV}; exec "$@"')
    return quote(["sh", "-c", script, "sh", *argv])


def _idle(hosts: dict[str, Host], point: Point) -> list[dict[str, Any]]:
    """3 s of ping, before the flows, from each flow's source to its destination and
    back (all at once): the path as it is when idle, beside the RTT declared."""
    pairs: list[tuple[str, str]] = []
    for f in point.spec.flows.values():
        if f.to is not None and f.count:
            for p in ((f.src, f.to), (f.to, f.src)):
                if p not in pairs:
                    pairs.append(p)
    found: list[dict[str, Any]] = [{} for _ in pairs]
    failed: list[HostError] = []
    count = int(IDLE_S / 0.2)

    def one(i: int, a: str, b: str) -> None:
        addr = point.hosts[b].to_address if point.hosts else b
        row: dict[str, Any] = {"from": a, "to": b, "address": addr}
        try:
            done = hosts[a].run(quote(["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "2", addr]),
                                hosts[a].spec.connect_timeout_s + IDLE_S + 10, "idle measurement")
        except HostError as e:
            failed.append(e)
            row["error"] = str(e)
            found[i] = row
            return
        counts = ping.counts(done.stdout)
        m = _RTT.search(done.stdout)
        if counts:
            row.update({"sent": counts[0], "received": counts[1],
                        "loss_pct": 100.0 * (1 - counts[1] / counts[0]) if counts[0] else None})
        if m:
            row.update({"rtt_ms_min": float(m.group(1)), "rtt_ms_avg": float(m.group(2)),
                        "rtt_ms_max": float(m.group(3)), "rtt_ms_mdev": float(m.group(4))})
        if done.code != 0 and not m:
            row["error"] = f"ping exited {done.code}: {(done.stdout + done.stderr).strip()[-200:]}"
        found[i] = row

    threads = [threading.Thread(target=one, args=(i, a, b), daemon=True) for i, (a, b) in enumerate(pairs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return found


def _theory_rtts(plan, idle: list[dict[str, Any]]) -> dict[str, float]:
    """The declared path's base RTT between each pair the idle measurement pinged (ms,
    a ping's 64-byte packets: the declared RTT plus their serialisation)."""
    out = {}
    for row in idle:
        try:
            out[f"{row['from']}>{row['to']}"] = round(analyse(plan, row["from"], row["to"]).base_rtt_s * 1e3, 4)
        except NetrigError:
            pass
    return out


def _client_timeout_s(point: Point, f, hosts: dict[str, Host]) -> float:
    """How long a netrig-perf flow's client may run: its duration (an hour for a flow
    of bytes), 30 s, its connect timeout and its host's."""
    return ((point.flow_duration(f) if f.bytes is None else 3600) + 30 + connect_timeout_s(f)
            + hosts[f.src].spec.connect_timeout_s)


def _start_server(h: Host, argv: list[str], out: Path, rid: str, flow: str, key: str):
    """A flow's one-off netrig-perf server on the host (`argv`: its tool's server
    command line, with the host's netrig-perf), its key on ssh's standard input; its -J
    document and its log stream back into the run's directory."""
    with safefs.open_new(out, f"runs/{rid}/server-{flow}.log") as log, \
            safefs.open_new(out, f"runs/{rid}/server-{flow}.json") as doc:
        p = h.popen(_pid_wrapped(argv, keyed=True), stdin=subprocess.PIPE, stdout=doc, stderr=log)
    try:
        assert p.stdin is not None
        p.stdin.write(f"{key}\n".encode())
        p.stdin.close()
    except OSError:
        pass  # ssh already gone: _wait_listening says why
    return p


def _wait_listening(h: Host, rdir: Path, flow: str, port: int, pids: dict[str, list[tuple[int, str]]],
                    proc) -> None:
    """Waits for the server's PID (its first line on stderr) and for it to listen."""
    log = rdir / f"server-{flow}.log"
    limit = time.monotonic() + h.spec.connect_timeout_s + 10
    pid = None
    while pid is None:
        m = _PID.search(_server_log(rdir, flow))
        if m:
            pid = int(m.group(1))
            break
        if proc.poll() is not None or time.monotonic() > limit:
            text = _server_log(rdir, flow)
            raise classify(h.name, h.spec, text or "no answer: the server's shell never said its PID",
                           "start server")
        time.sleep(0.02)
    pids[h.name].append((pid, "netrig-perf"))
    hexport = f"{port:04X}"
    script = (f"i=0; while [ $i -lt 200 ]; do "
              f"grep -qE ':{hexport} [0-9A-F]+:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && "
              f"kill -0 {pid} 2>/dev/null && exit 0; kill -0 {pid} 2>/dev/null || exit 3; "
              f"sleep 0.05; i=$((i+1)); done; exit 4")
    done = h.run(quote(["sh", "-c", script]), h.spec.connect_timeout_s + 20, "start server")
    if done.code != 0:
        said = _strip_pid(_server_log(rdir, flow)).strip()[-300:]
        why = "it exited" if done.code == 3 else "it was not listening after 10 s"
        hint = (f"is port {port} free on {h.name}?" if "in use" in said.lower() or done.code == 4 else
                f"is netrig-perf installed on {h.name}?" if "not found" in said.lower() else
                f"its log is {log}")
        raise HostError(h.name, h.spec, "start server",
                        f"the netrig-perf server for flow {flow} (port {port}): {why}" + (f": {said}" if said else ""),
                        hint)


def _strip_pid(text: str) -> str:
    return _PID.sub("", text, count=1).lstrip("\n")


def _flow(hosts: dict[str, Host], point: Point, o: Outcome, facts: dict[str, dict[str, Any]], port: int | None,
          key: str | None, interval: float, t0: float, stop: threading.Event,
          pids: dict[str, list[tuple[int, str]]]) -> None:
    f = o.spec
    if stop.wait(max(0.0, t0 + f.seconds("start") - time.monotonic())):
        o.error = "not started: the run was stopped"
        return
    dur = point.flow_duration(f)
    h = hosts[f.src]
    addr = point.hosts[f.to].to_address if point.hosts and f.to else ""
    kind = kind_of(f)
    tcp_info = 100 if f.kind == "tcp" else None
    tcp_info = next((int(units.seconds(m.interval or "100ms") * 1e3) for m in point.spec.monitors
                     if m.kind == "tcp_info" and m.flow == o.name), tcp_info)
    assert kind.argv is not None  # (a web flow is refused on real hosts)
    argv = kind.argv(Call(f, addr, port or 0, dur, interval, tcp_info if kind.served else None))
    needle = argv[0]
    if kind.served:
        argv = [facts[f.src]["perf"], *argv[1:]]
        timeout = _client_timeout_s(point, f, hosts)
        needle = "netrig-perf"
    else:
        assert kind.limit_s is not None
        timeout = kind.limit_s(f, dur) + h.spec.connect_timeout_s
    keyed = kind.served and key is not None
    run_process(o, h.argv(_pid_wrapped(argv, keyed)), timeout, t0, stop,
                stdin_text=f"{key}\n" if keyed else None)
    m = _PID.search(o.stderr)
    if m:
        pids[h.name].append((int(m.group(1)), needle))
        o.stderr = _strip_pid(o.stderr)
    if o.code == SSH_FAILED and isinstance(o, RemoteOutcome):
        err = classify(h.name, h.spec, o.stderr, "run flow")
        if m is None or " — " in str(err):  # ssh's failure (not a command's own status 255)
            o.host_error = err
            o.error = str(err)
    o.parse()


def _stop_all(hosts: dict[str, Host], pids: dict[str, list[tuple[int, str]]],
              servers: list[tuple[str, str, Any]]) -> list[str]:
    """Stops, by PID, every remote process of the run still running (a one-off server
    whose client never came, a flow stopped early), then the local ssh sessions; what
    could not be stopped."""
    errors = []
    deadline = time.monotonic() + 3  # a server ends by itself after its one client
    for _, _, p in servers:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except Exception:
            pass
    for name, procs in pids.items():
        h = hosts[name]
        if not procs or h.control is None:
            continue
        script = "; ".join(f"grep -qa {shlex.quote(n)} /proc/{pid}/cmdline 2>/dev/null && kill {pid}"
                           for pid, n in procs) + "; true"
        try:
            h.run(quote(["sh", "-c", script]), 15, "stop")
        except HostError as e:
            errors.append(f"{e} (processes left there: {', '.join(str(p) for p, _ in procs)})")
    for _, _, p in servers:
        end_process(p, 5)
    return errors


def _server_log(rdir: Path, flow: str) -> str:
    """What flow's server said so far (its log in the run's directory, rdir = OUT/runs/RID),
    read from the results directory without following a link: whoever owns it may swap
    a part for one, and what is read here goes into run.json."""
    return rec.log_tail(rdir.parent.parent, f"runs/{rdir.name}/server-{flow}.log", 1 << 20)


def _collect(servers: list[tuple[str, str, Any]], rdir: Path, hosts: dict[str, Host]) -> HostError | None:
    """The servers' output came back whole: a server whose ssh session failed (its host
    went away) leaves a document cut short, and the run is failed."""
    for flow, host, p in servers:
        text = _server_log(rdir, flow)
        if p.returncode == SSH_FAILED:
            h = hosts[host]
            said = _strip_pid(text).strip()
            e = classify(h.name, h.spec, said or f"the ssh session of flow {flow}'s server ended (ssh's "
                         "status 255) before the server did", "collect")
            if not str(e).count(" — "):
                e = HostError(h.name, h.spec, "collect", e.said, f"{h.name} closed the connection or stopped "
                              "answering: is it still up?")
            return e
    return None
