"""FRR on a lab's routers: each router's configuration, its daemons, and what its
routing table should hold once the protocols have converged.

The pure part, each router's configuration files (`configs`) and what it should route
once converged (`expected_routes`, `expected_adjacencies`, `expected_bgp_peers`), is
`netrig.lab.frrconf`'s; its names are importable from here too.

This module owns the system part: `start(...)`/`stop(...)` run the daemons inside a
router's namespace as FRR's user `frr` (Debian's; each daemon keeps only the
capabilities FRR gives it, so a raw line such as `log file /root/x` fails as frr
would), from the router's directory
`RUN/frr/PREFIX/ROUTER/` (configs, pid files, vty sockets, zserv.api, logs): root's,
group frr, 1770, its parents searchable by group frr only (and RUN by everyone), the
configs root's and 0640, so frr reads them but cannot replace them. Nothing of the lab's
root-only directory nor of the results is frr's to reach. Every daemon runs in the lab's
FRR mount namespace (netrig.lab.frrmount), where /var/tmp/frr is a tmpfs of the lab's:
FRR 8.4 makes a directory there per daemon and removes it at exit, and on the host's
ext4 (discard) a 500-router lab's 1,000 removals at once stalled its teardown (hundreds
of ospfds still in rmdir 5 s after SIGKILL); `remove` unmounts the namespace. `sweep(lab_dir)` kills any
process whose command line names a lab's routers' directory (by exact path, never by
program name). Stopping returns once every daemon has exited (netrig.procs). Stopping
zebra withdraws every route the router's protocols installed (FRR removes them from
the kernel on exit).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netrig import procs, safefs
from netrig.errors import NetrigError
from netrig.lab import frrmount, netns
from netrig.lab.frrconf import (
    configs,
    cost,
    default_wait_s,
    expected_adjacencies,
    expected_bgp_peers,
    expected_routes,
    full_by_iface,
    not_established,
    segment_label,
)
from netrig.lab.state import LabError, daemon_dir
from netrig.topo.model import Topology
from netrig.topo.plan import Plan

__all__ = ["STOP_WAIT_S", "VTYSH", "check_installed", "configs", "cost", "daemons", "daemons_dir",
           "default_wait_s", "expected_adjacencies", "expected_bgp_peers", "expected_routes",
           "frr_dir", "full_by_iface", "not_established", "remove", "router_dir", "router_status",
           "running", "segment_label", "start", "start_router", "start_time", "stop", "stop_all",
           "strays", "sweep", "vtysh", "vtysh_args", "write"]

DEFAULT_DIR = "/usr/lib/frr"
VTYSH = "vtysh"
# Start order; stop runs it backwards (protocols first, zebra last).
ORDER = ("zebra", "staticd", "ospfd", "bgpd")
INSTALL_HINT = "apt-get install frr, or bash scripts/install.sh"
STOP_WAIT_S = 5.0
USER = "frr"  # Debian's FRR user and group (FRR's own default); frr is in group frrvty
# A router's directory: root's, group frr; frr makes its pid files and sockets there, and
# the sticky bit keeps netrig's files (configs, logs) from being replaced by frr.
ROUTER_MODE = 0o1770
# The descriptors a daemon is started for (`--limit-fds`), as FRR's own packaging does
# (MAX_FDS=1024 in /etc/frr/daemons): each daemon allocates its event tables for as many
# as it may have, by default the soft RLIMIT_NOFILE it inherits (20,000 here: 2.9 MB of
# zebra's and ospfd's 11.7 MB at 50 routers, measured with `show memory`).
FDS = 1024
_ROOTS = safefs.Modes(file=0o600, dir=0o700, enforce=False)


def frr_dir() -> Path:
    """Where FRR's daemons are: $NETRIG_FRR_DIR, else Debian's /usr/lib/frr."""
    return Path(os.environ.get("NETRIG_FRR_DIR") or DEFAULT_DIR)


def daemons(topo: Topology, router: str) -> list[str]:
    """The daemons a router runs, in start order."""
    r = topo.routing_of(router)
    want = {"zebra", *(["ospfd"] if r.ospf_area is not None else []),
            *(["bgpd"] if r.asn is not None else []), *(["staticd"] if "staticd" in r.frr else [])}
    return [d for d in ORDER if d in want]


def fd_limit(topo: Topology, name: str) -> int:
    """`--limit-fds` for a daemon of the lab: FDS, and for bgpd room for a session to
    every other router and over every link as well (two descriptors each while a
    collision is resolved)."""
    if name != "bgpd":
        return FDS
    return FDS + 2 * (len(topo.dynamic) + len(topo.links))


def check_installed(topo: Topology) -> None:
    """LabError, before anything is built, if a daemon the lab needs is missing."""
    need = sorted({d for r in topo.dynamic for d in daemons(topo, r)}, key=ORDER.index)
    if not need:
        return
    where = frr_dir()
    missing = [d for d in need if not os.access(where / d, os.X_OK)]
    if missing:
        routers = ", ".join(topo.dynamic[:5]) + (" ..." if len(topo.dynamic) > 5 else "")
        raise LabError(f"FRR is not installed: {INSTALL_HINT} (routers {routers} run OSPF or BGP, "
                       f"and {', '.join(str(where / d) for d in missing)} "
                       f"{'is' if len(missing) == 1 else 'are'} missing; NETRIG_FRR_DIR names "
                       "another directory)")
    if shutil.which(VTYSH) is None:
        raise LabError(f"FRR is not installed: {INSTALL_HINT} (vtysh is not on the PATH)")


# The daemons.

def ids() -> tuple[int, int, set[int]]:
    """FRR's user: its uid, gid and every group it is in (LabError if there is none)."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        raise LabError(f"there is no user {USER}, which FRR's daemons run as (Debian's frr package "
                       f"creates it: {INSTALL_HINT})") from None
    return pw.pw_uid, pw.pw_gid, set(os.getgrouplist(USER, pw.pw_gid))


def daemons_dir(lab_dir: Path) -> Path:
    """RUN/frr/PREFIX: the lab's routers' directories (outside its root-only directory:
    the daemons, as frr, must reach them)."""
    return daemon_dir(lab_dir, "frr")


def router_dir(lab_dir: Path, router: str) -> Path:
    return daemons_dir(lab_dir) / router


def vtysh_args(d: Path) -> list[str]:
    """What vtysh needs to reach a router's daemons (and skip PAM)."""
    return ["--config_dir", str(d), "--vty_socket", str(d)]


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot): with the PID, it names one
    process, never a later one that reuses the number."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def running(pid: int, started: int) -> bool:
    return pid > 0 and start_time(pid) == started


def _rel(lab_dir: Path, *names: str) -> tuple[Path, str]:
    """RUN and frr/PREFIX/... below it."""
    return lab_dir.parent.parent, "/".join(("frr", lab_dir.name, *names))


def write(plan: Plan, lab_dir: Path, router: str, ns: str) -> Path:
    """The router's directory, made afresh (root's, group frr, ROUTER_MODE), with its
    configs (root's, group frr reads them; vtysh.conf root's alone)."""
    uid, gid, groups = ids()
    d = router_dir(lab_dir, router)
    run, rel = _rel(lab_dir, router)
    safefs.remove_tree(run, rel)
    try:
        safefs.shared_dir(run, rel, safefs.Shared(gid, leaf=ROUTER_MODE))
    except (OSError, NetrigError) as e:
        raise LabError(f"router {router}: its directory {d}: {e}") from None
    blocked = safefs.unreachable_by(d, uid, groups)
    if blocked is not None:
        raise LabError(f"router {router}: FRR's daemons run as {USER}, which may not enter {blocked} "
                       f"on the way to {d}: give NETRIG_RUN_DIR a directory {USER} can reach")
    for name, text in configs(plan, router).items():
        mode = 0o600 if name == "vtysh.conf" else 0o640  # vtysh runs as root
        safefs.write_shared(run, f"{rel}/{name}", text, safefs.Shared(gid, leaf=ROUTER_MODE, file=mode))
    return d


def start_router(topo: Topology, lab_dir: Path, router: str, ns: str) -> dict[str, list[int]]:
    """Starts the router's daemons, zebra first (see _start_daemon); daemon -> [pid,
    start time]. Each forks away from its starter; this process adopts them
    (procs.adopting), so stopping them later from here leaves no zombie for PID 1 to
    collect. The lab's FRR mount namespace is made if it is not there (a lab that had
    none: built by an older netrig)."""
    if not frrmount.exists(lab_dir):
        uid, gid, _ = ids()
        frrmount.make(lab_dir, uid, gid, frrmount.size_for(len(topo.dynamic)))
    with procs.adopting():
        out: dict[str, list[int]] = {}
        for name in daemons(topo, router):
            out[name] = _start_daemon(lab_dir, router, ns, name, fd_limit(topo, name))
            if name == "zebra":  # the others connect to zebra's socket: wait for it
                _wait_zserv(lab_dir, router)
        return out


def _start_daemon(lab_dir: Path, router: str, ns: str, name: str, fds: int = FDS) -> list[int]:
    """Starts one of the router's daemons in its network namespace and the lab's FRR
    mount namespace, as FRR's user with the capabilities FRR keeps for each (`-u frr -g
    frr`: each starts as root, opens its log, drops to frr); [pid, start time]."""
    d = router_dir(lab_dir, router)
    run, rel = _rel(lab_dir, router)
    _, gid, _ = ids()
    for f in (f"{name}.pid", f"{name}.vty") + (("zserv.api",) if name == "zebra" else ()):
        (d / f).unlink(missing_ok=True)  # (a link is removed, not followed)
    # Its log, root's before the daemon opens it (as root, before it drops to frr):
    # the sticky directory keeps frr from putting a link in place of a root file.
    # A restarted daemon appends to its log if that is still netrig's own.
    try:
        log: os.stat_result | None = os.lstat(d / f"{name}.log")
    except FileNotFoundError:
        log = None
    if log is None or not stat.S_ISREG(log.st_mode) or log.st_uid != os.geteuid():
        safefs.write_shared(run, f"{rel}/{name}.log", b"", safefs.Shared(gid, leaf=ROUTER_MODE, file=0o600))
    argv = [str(frr_dir() / name), "-d", "-u", USER, "-g", USER, "-P", "0",
            "-f", str(d / f"{name}.conf"), "-i", str(d / f"{name}.pid"), "-z", str(d / "zserv.api"),
            "--vty_socket", str(d), "--log", f"file:{d / name}.log", "--limit-fds", str(fds)]
    with safefs.open_new(run, f"{rel}/{name}.err", _ROOTS) as err:
        p = _in_netns(ns, lab_dir, argv, err, router)
    if p.returncode != 0:
        raise LabError(f"router {router}: {name} did not start (exit {p.returncode}): "
                       f"{_tail(d / f'{name}.err') or _tail(d / f'{name}.log')}")
    pid = _pid_file(d / f"{name}.pid")
    started = start_time(pid) if pid else None
    if not pid or started is None:
        raise LabError(f"router {router}: {name} exited at start: "
                       f"{_tail(d / f'{name}.log') or _tail(d / f'{name}.err')}")
    return [pid, started]


def _in_netns(ns: str, lab_dir: Path, argv: list[str], out, router: str) -> subprocess.CompletedProcess:
    """Runs argv in network namespace ns and the lab's FRR mount namespace: a thread
    joins both and starts it (a child takes its namespaces from the thread that forks
    it; the thread ends after). Not `ip netns exec`, which gives each process a mount
    namespace of its own, a copy of every mount under /run/netns (O(N) mounts per
    daemon, O(N^2) in a lab, each unmounted again when the daemon exits). The lab's one
    mount namespace differs from the host's by a tmpfs on /var/tmp/frr, where FRR 8.4
    keeps a directory per daemon, named by its PID before it daemonizes (its crash log
    and per-thread log buffers), removed at exit: on the host's disk, a 500-router
    lab's removals queued past SIGKILL (netrig.lab.frrmount). Joining it costs ~50 us a
    daemon, measured (an open and two system calls in the thread; no process). Everything else
    the daemons use is where their flags put it, in the router's directory (ospfd also
    writes the host's /run/frr/ospfd-gr.json)."""
    cwd = os.getcwd()  # (a relative NETRIG_FRR_DIR or run directory still means the same)

    def run() -> subprocess.CompletedProcess:
        frrmount.enter(lab_dir)
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=30, cwd=cwd)

    try:
        return netns.run_in(ns, run)
    except (netns.NetnsError, frrmount.FrrMountError) as e:
        raise LabError(f"router {router}: {e}") from None


def _wait_zserv(lab_dir: Path, router: str, timeout: float = 5.0) -> None:
    d = router_dir(lab_dir, router)
    deadline = time.monotonic() + timeout
    while not (d / "zserv.api").exists():
        if time.monotonic() > deadline:
            raise LabError(f"router {router}: zebra made no {d / 'zserv.api'} in {timeout:g} s: "
                           f"{_tail(d / 'zebra.log')}")
        time.sleep(0.005)


def _pid_file(p: Path) -> int:
    try:
        return int(safefs.read_tail(p, 64).strip() or 0)  # frr's file: read, never followed
    except ValueError:
        return 0


def _tail(p: Path, n: int = 400) -> str:
    text = safefs.read_tail(p, 65536).strip()
    useful = [x for x in text.splitlines() if "could chown socket" not in x and "write error on fd 2" not in x]
    return " | ".join(useful)[-n:]


def start(plan: Plan, lab_dir: Path, node_ns: dict[str, str], record: Callable[[str, dict], None],
          workers: int = 8) -> None:
    """Writes every dynamic router's files, then starts their daemons, `workers` at once:
    every zebra, then every router's other daemons (each connects to its zebra, whose
    socket is there by then). `record(router, daemons)` is called as a router's daemons
    run (its zebra, then all of them: the caller saves them in the lab's state).
    A few at a time, not all at once: routers that start together form every adjacency
    together and flood and compute more (200 OSPF routers all started within 10 s had
    every route after 43 s and 61 s of FRR's CPU, against 24 s and 18 s started eight
    at a time; docs/development.md, Benchmarks)."""
    topo = plan.topo
    routers = topo.dynamic
    for r in routers:
        write(plan, lab_dir, r, node_ns[r])
    uid, gid, _ = ids()
    frrmount.make(lab_dir, uid, gid, frrmount.size_for(len(routers)))
    started: dict[str, dict[str, list[int]]] = {r: {} for r in routers}

    def zebra(r: str) -> None:
        started[r]["zebra"] = _start_daemon(lab_dir, r, node_ns[r], "zebra", fd_limit(topo, "zebra"))
        record(r, dict(started[r]))

    def protocols(r: str) -> None:
        _wait_zserv(lab_dir, r)
        for name in daemons(topo, r)[1:]:
            started[r][name] = _start_daemon(lab_dir, r, node_ns[r], name, fd_limit(topo, name))
        record(r, dict(started[r]))

    speaking = [r for r in routers if len(daemons(topo, r)) > 1]
    with procs.adopting(), ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for f in [pool.submit(zebra, r) for r in routers]:
                f.result()
            for f in [pool.submit(protocols, r) for r in speaking]:
                f.result()
        except BaseException:
            # (a failed start, a ^C, SIGTERM): no daemon starts once this returns, so the
            # teardown that follows finds every one (the queue left alone went on
            # starting hundreds into a lab already torn down, from threads the
            # interpreter waits for at exit).
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def stop(recorded: dict[str, list[int]], wait_s: float = STOP_WAIT_S) -> list[str]:
    """Stops one router's daemons (daemon -> [pid, start time]): protocols, then zebra
    (which withdraws their routes); SIGTERM, then SIGKILL after wait_s. Returns only
    once each has exited; the daemons that had to be killed."""
    protocols = [d for d in reversed(ORDER) if d in recorded and d != "zebra"]
    killed = []
    for group in (protocols, ["zebra"] if "zebra" in recorded else []):
        killed += stop_all([(d, *recorded[d]) for d in group], wait_s)
    return killed


def stop_all(named: list[tuple[str, int, int]], wait_s: float = STOP_WAIT_S) -> list[str]:
    """SIGTERM to each (name, pid, start time) still running, SIGKILL to those still there
    after wait_s; returns once each has exited (netrig.procs.stop): the names of those
    killed, and of any still there after SIGKILL (said as such)."""
    group = [procs.Proc(p, s, n) for n, p, s in named]
    done = procs.stop(group, grace_s=wait_s)
    procs.collect(group)  # (daemons this process started are its children: procs.adopting)
    return [p.name for p in done.killed] + [
        f"{p.name} (pid {p.pid}: still there after SIGKILL"
        + (f", in the kernel: {w})" if (w := procs.in_kernel(p.pid)) else ")") for p in done.left]


def strays(lab_dir: Path) -> list[procs.Proc]:
    """Every process whose command line names a path inside the lab's routers'
    directories (a daemon's -f, -i, -z, --vty_socket, --log): the daemons a netrig
    killed before it recorded them, or whose namespace is gone. Matches paths exactly,
    never program names."""
    tops = [str(daemons_dir(lab_dir)), str(lab_dir / "frr")]  # (and where an older netrig put them)
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for a in args:
            s = a.decode(errors="replace").removeprefix("file:")
            if any(s == top or s.startswith(top + "/") for top in tops):
                p = procs.here(int(entry), f"{Path(args[0].decode(errors='replace')).name} (no state named it)")
                if p is not None:
                    found.append(p)
                break
    return found


def sweep(lab_dir: Path) -> list[procs.Proc]:
    """Kills (SIGKILL) the lab's `strays` and waits for each to exit; returns them."""
    found = strays(lab_dir)
    procs.stop(found, sig=signal.SIGKILL)
    return found


def remove(lab_dir: Path) -> list[str]:
    """Unmounts the lab's FRR mount namespace (netrig.lab.frrmount.release: its tmpfs
    ends with its last daemon) and removes the lab's routers' directories (links inside
    removed, never followed); the problems of the unmounting."""
    errors = frrmount.release(lab_dir)
    run, rel = _rel(lab_dir)
    safefs.remove_tree(run, rel)
    d = lab_dir / "frr"  # where an older netrig put them
    if d.is_dir() and not d.is_symlink():
        shutil.rmtree(d, ignore_errors=True)
    return errors


# What a running router says about itself (`netrig status`).

def vtysh(d: Path, daemon: str, command: str, timeout: float = 3.0) -> object:
    """One `show ... json` command to one of a router's daemons, parsed. vtysh runs
    here, in no namespace of the lab's: it talks to the daemons through the sockets in
    their router's directory `d`."""
    argv = [VTYSH, *vtysh_args(d), "-d", daemon, "-c", command]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"{daemon}: '{command}' gave no answer in {timeout:g} s") from None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        raise LabError(f"{daemon}: '{command}': {(p.stderr or p.stdout).strip()[:200]}") from None


def ospf_neighbours(doc: object) -> list[dict]:
    """`show ip ospf neighbor json` as [{id, state, iface}], one per adjacency."""
    out = []
    for rid, entries in ((doc or {}).get("neighbors") or {}).items():  # type: ignore[union-attr]
        for e in entries if isinstance(entries, list) else [entries]:
            out.append({"id": rid, "state": e.get("nbrState") or e.get("state", "?"),
                        "iface": str(e.get("ifaceName", "")).split(":")[0]})
    return out


def bgp_coalesce_s(peers: int) -> float:
    """How long bgpd holds a new update subgroup's first UPDATEs (coalesce time): 1 s,
    plus 50 ms per peer, at most 10 s (bgpd's defaults)."""
    return min(10.0, 1.0 + 0.05 * peers)


def bgp_table_version(doc: object) -> int | None:
    """`show bgp summary json`'s IPv4 table version: it moves with every best-path change."""
    return (((doc or {}).get("ipv4Unicast") or {}).get("tableVersion"))  # type: ignore[union-attr]


def bgp_peers(doc: object) -> list[dict]:
    """`show bgp summary json` as [{address, as, state, received}]."""
    peers = (((doc or {}).get("ipv4Unicast") or {}).get("peers") or {})  # type: ignore[union-attr]
    return [{"address": a, "as": p.get("remoteAs"), "state": p.get("state", "?"),
             "received": p.get("pfxRcd", 0), "up_ms": p.get("peerUptimeMsec")} for a, p in peers.items()]


def too_new(want: dict[str, int], peers: list[dict], hold_s: float) -> list[str]:
    """The Established sessions of `want` up for less than `hold_s`: bgpd may still hold
    their first UPDATEs (bgp_coalesce_s), so a route learnt elsewhere may yet lose."""
    return [f"{p['address']} (AS {want[p['address']]}, up {p['up_ms'] / 1000:.1f} s of {hold_s:.1f} s)"
            for p in peers if p["address"] in want and p["state"] == "Established"
            and isinstance(p.get("up_ms"), int) and p["up_ms"] < hold_s * 1000]


def router_status(ns: str, d: Path, procs: dict[str, list[int]], timeout: float = 3.0) -> dict:
    """A router's daemons (pid, running), OSPF neighbours, BGP peers and kernel route
    count; what could not be asked is in `errors`."""
    out: dict = {"daemons": {n: {"pid": p, "running": running(p, s)} for n, (p, s) in procs.items()},
                 "stopped": not procs, "ospf": [], "bgp": [], "routes": None, "errors": []}
    asks = (("ospfd", "show ip ospf neighbor json", "ospf", ospf_neighbours),
            ("bgpd", "show bgp summary json", "bgp", bgp_peers))
    for daemon, command, key, read in asks:
        if out["daemons"].get(daemon, {}).get("running"):
            try:
                out[key] = read(vtysh(d, daemon, command, timeout))
            except LabError as e:
                out["errors"].append(str(e))
    p = subprocess.run(["ip", "-n", ns, "-j", "route", "show"], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode == 0:
        out["routes"] = len(json.loads(p.stdout or "[]"))
    else:
        out["errors"].append(f"ip route: {p.stderr.strip()}")
    return out
