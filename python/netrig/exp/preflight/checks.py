"""What this machine must have to run a scenario, asked by `netrig run` (and --resume)
only, never by a reader of results: the congestion controls its flows name, nginx and
curl for web flows (and a curl that can do what they ask), tcpdump to compile a
capture's filter. Each problem names the file, the line and the key, as the scenario's
own checks do (a value a sweep set: at its sweep item).
"""

from __future__ import annotations

from netrig import suggest
from netrig.errors import NetrigError
from netrig.exp.preflight import cc, webtools
from netrig.exp.spec.model import Key, Point, Scenario, ScenarioError, ScenarioFile
from netrig.topo import load as tload


def preflight(scen: Scenario) -> None:
    """ScenarioError with every problem of every point (each said once)."""
    problems: list[str] = []
    for p in scen.points:
        for path, msg in machine_problems(p.spec):
            said = _placed(scen, p, path, msg)
            if said not in problems:
                problems.append(said)
    if problems:
        raise ScenarioError(problems)


def machine_problems(spec: ScenarioFile) -> list[tuple[Key, str]]:
    """(key path, what this machine lacks for it) for one point's scenario."""
    out: list[tuple[Key, str]] = []
    valid: set[str] | None = None
    for name, f in spec.flows.items():
        if f.cc is not None and f.kind == "tcp":
            valid = cc.congestion_controls() if valid is None else valid
            if valid and f.cc not in valid:
                out.append((("flows", name, "cc"), f"'{f.cc}' is not a TCP congestion control "
                            f"this kernel has{suggest.unknown(f.cc, sorted(valid), 'it has')}"))
        if f.kind == "web":
            out += _web(name, f.tls, f.http, f.new_conn)
    for i, m in enumerate(spec.monitors):
        if m.kind == "capture" and m.filter is not None:
            from netrig.link import bpf  # runs tcpdump: only for a scenario that captures

            try:
                bpf.compile_bpf(m.filter)
            except NetrigError as e:
                out.append((("monitors", i, "filter"), str(e)))
    return out


def _web(name: str, tls: bool, http: str, new_conn: bool) -> list[tuple[Key, str]]:
    """A web flow runs nginx and curl (exp/kinds/web.py): they must be installed, and
    curl must be able to do what the flow asks."""
    base = webtools.missing(False)
    extra = [x for x in webtools.missing(True) if x not in base] if tls else []
    if base:
        return [(("flows", name, "kind"), "a web flow needs " + " and ".join(base + extra)
                 + ", which this machine lacks")]
    if extra:  # (blamed on tls:, which a sweep may have set)
        return [(("flows", name, "tls"), "a web flow over TLS needs " + " and ".join(extra)
                 + ", which this machine lacks")]
    if http == "2" and not tls and not new_conn:
        version = webtools.curl_version()
        if version is not None and version < webtools.H2C_REUSE_FIXED:
            return [(("flows", name, "new_conn"), f"curl {'.'.join(map(str, version))} cannot "
                     "reuse a cleartext HTTP/2 connection (every fetch after the first fails: "
                     "curl issue #10634, fixed in 8.0): give tls: true (HTTP/2 over TLS, as "
                     "browsers speak it) or new_conn: true")]
    return []


def _placed(scen: Scenario, p: Point, path: Key, msg: str) -> str:
    """`FILE:LINE: KEY: msg`, or at the sweep item that set the value."""
    dotted = tload._key(path)
    for key, value in p.params.items():
        if any(_covers(k.strip(), path) for k in key.split(",")):
            j = scen.sweep.get(key, [value]).index(value) if value in scen.sweep.get(key, []) else 0
            line = scen.lines.get(("sweep", key, j), scen.lines.get(("sweep", key), 1))
            return f"{scen.source}:{line}: sweep.{key}[{j}]: {value!r}: {dotted}: {msg}"
    if len(path) > 1 and path[0] == "flows" and ("flows", path[1]) not in scen.lines:
        base = str(path[1]).rsplit(".", 1)[0]  # a copy of a flow with count: N
        path = ("flows", base, *path[2:])
    line = tload._line(scen.lines, path) if scen.lines else 1
    return f"{scen.source}:{line}: {dotted}: {msg}"


def _covers(key: str, path: Key) -> bool:
    """Whether a sweep key (`flows.bulk.cc`, `flows.*.cc`) names the value at `path`."""
    parts = key.split(".")
    if len(parts) > len(path):
        return False
    return all(k == "*" or k == str(v) or (i == 1 and str(v).startswith(k + ".")) for i, (k, v)
               in enumerate(zip(parts, path)))
