"""A drawing of a topology: SVG (or PNG) with matplotlib, and text for a terminal.

    draw(topo, plan=None, flows=None, bottlenecks=None) -> SVG text
    text(topo, plan=None, flows=None, bottlenecks=None, width=80) -> lines for a terminal
    graph_command(file, out=None, fmt=None)  `netrig graph FILE [-o out.svg|.png]`

Pure: reads the `Topology` (each link's `direction(d)`, numbers parsed once) and, when
flows are drawn, the routes of its `Plan` (`plan.path`; without flows no plan is made, so
a running lab's topology that a file could not give, parallel links, draws too); draws
nothing on screen and touches no system state (graph_command writes the one file it is
asked for).

Every link is labelled with what each direction does: rate, delay (and jitter, loss),
the queue as it runs where a rate fills it (the user's limit, else the discipline's
default) and the discipline; one label when both directions agree. `flows` (name ->
(sender, receiver)) are drawn along their routed paths; the bottleneck (a link name
in `bottlenecks`, else the slowest rated hop of each flow's path, else the slowest
rated link of the topology) is drawn thick and labelled as such.

The drawing's layout is Graphviz's `dot` (Debian's graphviz package, run as a command:
`layout`): a layered layout made for networks of this size, left to right from the first
host, that orders each layer to cross as few links as it can and makes room for every
link's label; the same topology gives the same drawing. The text (`text`) lists nodes by
hops from the first host (`columns`), which needs no layout.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from netrig import units
from netrig.errors import NetrigError
from netrig.link.spec import Direction
from netrig.topo.model import Link, Topology
from netrig.topo.plan import Hop, Plan, make_plan, path

Flows = Mapping[str, tuple[str, str]]
WIDTH = 80
ARROW = {0: "→", 1: "←"}
FLOW_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
BOTTLENECK_COLOUR = "#d62728"


# What a link does, in words.
def direction_label(d: Direction) -> str:
    """`1.5 Mbit/s, 5 ms, queue 100 packets, pie (target 20 ms)`; `` when it does nothing."""
    parts = []
    if d.rate_bps:
        parts.append(units.format_rate(d.rate_bps))
    elif d.trace:
        parts.append(f"rate from trace {Path(d.trace).name}")
    if d.delay_s:
        delay = units.format_seconds(d.delay_s)
        parts.append(f"{delay} ± {units.format_seconds(d.jitter_s)}" if d.jitter_s else delay)
    if d.loss:
        parts.append(f"{d.loss * 100:g} % loss")
    if d.gemodel:
        parts.append("Gilbert-Elliott loss")
    packets, nbytes = d.limit if (d.rate_bps or d.trace) else (d.queue_packets, d.queue_bytes)
    if packets is not None:
        parts.append(f"queue {packets} packets")
    elif nbytes is not None:
        parts.append(f"queue {nbytes} bytes")
    if d.rate_bps or d.trace or d.aqm.name != "droptail":
        given = ", ".join(f"{k} {_param(v, k)}" for k, v in d.aqm.given.items())
        parts.append(f"{d.aqm.name} ({given})" if given else d.aqm.name)
    return ", ".join(parts)


def _param(v: object, key: str) -> str:
    if isinstance(v, float) and key in ("target", "interval", "tupdate"):
        return units.format_seconds(v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def link_label(link: Link) -> list[str]:
    """One line when both directions agree (`both ways`), else one per direction."""
    a, b = direction_label(link.direction(0)), direction_label(link.direction(1))
    if a == b:
        return [a + " (both ways)" if a else "no shaping"]
    return [f"{link.a}→{link.b}: {a or 'no shaping'}", f"{link.b}→{link.a}: {b or 'no shaping'}"]


# Paths and bottlenecks.
def flow_paths(plan: Plan, flows: Flows | None) -> dict[str, list[Hop]]:
    return {name: path(plan, src, dst) for name, (src, dst) in (flows or {}).items()}


def find_bottlenecks(topo: Topology, paths: Mapping[str, list[Hop]]) -> list[str]:
    """The slowest rated hop of each flow's path (its link's name); without flows, the
    slowest rated link of the topology. Empty when nothing has a rate."""
    out: list[str] = []
    if paths:
        for hops in paths.values():
            rated = [h for h in hops if h.link.direction(h.d).rate_bps]
            if rated:
                slow = min(rated, key=lambda h: h.link.direction(h.d).rate_bps)
                if slow.link.name not in out:
                    out.append(slow.link.name)
        return out
    rated = [(min(r for r in (l.direction(0).rate_bps, l.direction(1).rate_bps) if r), i, l.name)
             for i, l in enumerate(topo.links) if l.direction(0).rate_bps or l.direction(1).rate_bps]
    return [min(rated)[2]] if rated else []


# Layout.
class LayoutError(NetrigError):
    """Graphviz's dot is missing or refused the graph."""


DOT_TIMEOUT_S = 20


def columns(topo: Topology) -> dict[str, int]:
    """node -> hops from the first host of its connected part (breadth first; the
    first host in file order), for the text listing."""
    adj: dict[str, list[str]] = {n: [] for n in topo.nodes}
    for l in topo.links:
        adj[l.a].append(l.b)
        adj[l.b].append(l.a)
    col: dict[str, int] = {}
    for start in [n for n, k in topo.nodes.items() if k == "host"] + list(topo.nodes):
        if start in col:
            continue
        col[start], queue = 0, [start]
        while queue:
            n = queue.pop(0)
            for m in adj[n]:
                if m not in col:
                    col[m] = col[n] + 1
                    queue.append(m)
    return col


def dot_source(topo: Topology) -> str:
    """The topology as Graphviz's dot reads it: left to right, every node a box of the
    drawn marker's size, every link with its label's text (so dot leaves room for it)."""
    def q(x: str) -> str:
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = ["graph netrig {", "  rankdir=LR; ranksep=1.3; nodesep=0.5; splines=line;",
             "  node [shape=box, fixedsize=true, width=0.55, height=0.55, fontsize=9];",
             "  edge [fontsize=7];"]
    lines += [f"  {q(n)};" for n in topo.nodes]
    col = columns(topo)
    for l in topo.links:
        label = "\\n".join(textwrap.fill(x, 30).replace("\n", "\\n") for x in _label_lines(l))
        a, b = (l.a, l.b) if col[l.a] <= col[l.b] else (l.b, l.a)  # dot ranks tail before head
        lines.append(f"  {q(a)} -- {q(b)} [label={q(label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def layout(topo: Topology) -> dict[str, tuple[float, float]]:
    """node -> (x, y) in inches, as Graphviz's dot lays the topology out (`dot -Tplain`):
    LayoutError, saying how to install it, when dot is not there."""
    return placed(topo)[0]


def placed(topo: Topology) -> tuple[dict[str, tuple[float, float]], dict[int, tuple[float, float]]]:
    """layout's nodes, and where dot put each link's label (by the link's index)."""
    exe = shutil.which("dot")
    if exe is None:
        raise LayoutError("drawing a topology needs Graphviz's dot, which is not installed: "
                          "apt-get install graphviz (scripts/install.sh does)")
    try:
        p = subprocess.run([exe, "-Tplain"], input=dot_source(topo), capture_output=True, text=True,
                           timeout=DOT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LayoutError(f"Graphviz's dot did not lay the topology out: {e}") from e
    if p.returncode != 0:
        raise LayoutError(f"Graphviz's dot refused the topology: {p.stderr.strip()[:300]}")
    return parse_plain(p.stdout, topo)


def parse_plain(out: str, topo: Topology) -> tuple[dict[str, tuple[float, float]],
                                                   dict[int, tuple[float, float]]]:
    """Node positions from dot's plain output (`node NAME X Y ...` lines), and each
    link's label position (`edge TAIL HEAD N X1 Y1 ... LABEL XL YL ...`, in the links'
    order)."""
    import shlex

    pos: dict[str, tuple[float, float]] = {}
    labels: dict[int, tuple[float, float]] = {}
    edges = []
    for line in out.splitlines():
        parts = shlex.split(line) if line.startswith(("node ", "edge ")) else []
        if parts and parts[0] == "node":
            pos[parts[1]] = (float(parts[2]), float(parts[3]))
        elif parts:
            n = int(parts[3])
            rest = parts[4 + 2 * n:]
            pts = [(float(parts[4 + 2 * j]), float(parts[5 + 2 * j])) for j in range(n)]
            edges.append(((parts[1], parts[2]), (float(rest[1]), float(rest[2])) if len(rest) >= 5 else None,
                          pts))
    missing = [n for n in topo.nodes if n not in pos]
    if missing:
        raise LayoutError(f"Graphviz's dot placed no {', '.join(missing)}")
    for i, l in enumerate(topo.links):
        k = next((j for j, (ends, _, _) in enumerate(edges) if set(ends) == {l.a, l.b}), None)
        if k is not None:
            _, at, _ = edges.pop(k)
            if at is not None:
                labels[i] = at
    return pos, labels


# Text.
def text(topo: Topology, plan: Plan | None = None, flows: Flows | None = None,
         bottlenecks: Sequence[str] | None = None, width: int = WIDTH,
         title: str | None = None) -> str:
    """The topology for a terminal, no line longer than `width`: nodes by column,
    every link with its label, each flow's path; the bottleneck marked."""
    paths = flow_paths(plan or make_plan(topo), flows) if flows else {}
    slow = list(bottlenecks) if bottlenecks is not None else find_bottlenecks(topo, paths)
    kinds = {k: sum(v == k for v in topo.nodes.values()) for k in ("host", "switch", "router")}
    counts = ", ".join(f"{n} {k}{'es' if k == 'switch' and n != 1 else 's' if n != 1 else ''}"
                       for k, n in kinds.items() if n)
    out = [f"{title or topo.name}: {counts}, {len(topo.links)} link{'s' * (len(topo.links) != 1)}"]
    col = columns(topo)
    out.append("nodes, by hops from the first host:")
    for c in sorted(set(col.values())):
        names = " ".join(f"{n}({topo.nodes[n][0]})" for n in topo.nodes if col[n] == c)
        out += _wrap(f"{c:>3}  ", names, width)
    out.append("links (rate, delay, queue, discipline; h host, s switch, r router):")
    names = {l.name: f"{l.name} {l.a}-{l.b}" if l.name != f"{l.a}-{l.b}" else l.name
             for l in topo.links}
    pad = min(max(len(v) for v in names.values()), 24) if names else 0
    for l in topo.links:
        mark = "*" if l.name in slow else " "
        for i, line in enumerate(link_label(l)):
            head = f"{mark} {names[l.name]:<{pad}}  " if i == 0 else " " * (pad + 4)
            out += _wrap(head, line, width)
    if paths:
        out.append("flows (sender → receiver, as routed):")
        for name, hops in paths.items():
            out += _wrap(f"  {name}: ", _route_text(hops, slow), width)
    if slow:
        out.append("* bottleneck: " + ", ".join(slow) + " (the slowest rated link"
                   + (" on a flow's path)" if paths else " of the topology)"))
    return "\n".join(line for part in out for line in _hard_wrap(part, width)) + "\n"


def _route_text(hops: list[Hop], slow: Sequence[str]) -> str:
    if not hops:
        return "(the same node)"
    nodes = [hops[0].frm] + [f"[{h.link.name}]> {h.to}" if h.link.name in slow else h.to
                             for h in hops]
    return " → ".join(nodes)


def _wrap(head: str, body: str, width: int) -> list[str]:
    return textwrap.wrap(body, width=width, initial_indent=head,
                         subsequent_indent=" " * min(len(head), width // 2),
                         break_on_hyphens=False) or [head.rstrip()]


def _hard_wrap(line: str, width: int) -> list[str]:
    return [line[i:i + width] for i in range(0, max(len(line), 1), width)] if len(line) > width \
        else [line]


# Drawing.
def draw(topo: Topology, plan: Plan | None = None, flows: Flows | None = None,
         bottlenecks: Sequence[str] | None = None, fmt: str = "svg",
         title: str | None = None) -> str | bytes:
    """The topology drawn: SVG text (texts kept as <text>, so a reader can search
    them), or PNG bytes with fmt="png"."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = flow_paths(plan or make_plan(topo), flows) if flows else {}
    slow = list(bottlenecks) if bottlenecks is not None else find_bottlenecks(topo, paths)
    xy, label_at = placed(topo)
    span_x = max(p[0] for p in xy.values()) - min(p[0] for p in xy.values())
    span_y = max(p[1] for p in xy.values()) - min(p[1] for p in xy.values())
    fig_w = min(max(6.0, span_x + 2.5), 16.0)
    fig_h = min(max(2.4, span_y + 0.3 * len(paths) + 1.8), 14.0)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "netrig"}):
        fig, ax = plt.subplots(figsize=(fig_w, fig_h))
        try:
            _draw_links(ax, topo, xy, slow, label_at)
            _draw_flows(ax, paths, xy)
            _draw_nodes(ax, topo, xy)
            ax.set_axis_off()
            xs, ys = [p[0] for p in xy.values()], [p[1] for p in xy.values()]
            ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
            ax.set_ylim(min(ys) - 0.35 - 0.12 * len(paths), max(ys) + 0.75)
            if paths or slow:
                ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(paths) + 1),
                          fontsize=8, frameon=False)
            ax.set_title(f"{title or topo.name}: {len(topo.nodes)} nodes, {len(topo.links)} links",
                         fontsize=10, pad=2)
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
        finally:
            plt.close(fig)
    data = buf.getvalue()
    return data.decode("utf-8") if fmt == "svg" else data


def _label_lines(l: Link) -> list[str]:
    """A link's label as drawn: its name (and BOTTLENECK, by the caller) over what it does."""
    label = link_label(l)
    return ([l.name] if label != ["no shaping"] else []) + label


def _draw_links(ax, topo: Topology, xy: dict[str, tuple[float, float]], slow: Sequence[str],
                label_at: Mapping[int, tuple[float, float]]) -> None:
    seen_slow = False
    for i, l in enumerate(topo.links):
        (x0, y0), (x1, y1) = xy[l.a], xy[l.b]
        is_slow = l.name in slow
        ax.plot([x0, x1], [y0, y1], color=BOTTLENECK_COLOUR if is_slow else "#57606a",
                lw=4.5 if is_slow else 1.4, zorder=1, solid_capstyle="round",
                label="bottleneck" if is_slow and not seen_slow else None)
        seen_slow |= is_slow
        label = link_label(l)
        shaped = label != ["no shaping"]
        lines = ([f"{l.name}" + (" — BOTTLENECK" if is_slow else "")] if shaped or is_slow else []) \
            + [textwrap.fill(x, 30) for x in label]
        # where dot made room for it (it knows every label's size), else above the middle
        mx, my = label_at.get(i, ((x0 + x1) / 2, (y0 + y1) / 2 + 0.12))
        ax.text(mx, my, "\n".join(lines), ha="center", va="center",
                fontsize=6.5 if shaped else 5.5, color=BOTTLENECK_COLOUR if is_slow else
                ("#1b1f24" if shaped else "#8c959f"), zorder=4,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})


def _draw_flows(ax, paths: Mapping[str, list[Hop]], xy: dict[str, tuple[float, float]]) -> None:
    for k, (name, hops) in enumerate(paths.items()):
        if not hops:
            continue
        off = -0.07 * (k + 1)
        pts = [xy[hops[0].frm]] + [xy[h.to] for h in hops]
        colour = FLOW_COLOURS[k % len(FLOW_COLOURS)]
        xs = [p[0] for p in pts]
        ys = [p[1] + (off if 0 < i < len(pts) - 1 else 0.0) for i, p in enumerate(pts)]
        ax.plot(xs, ys, color=colour, lw=1.6, ls="--", zorder=2,
                label=f"flow {name}: {hops[0].frm} → {hops[-1].to}")
        ax.annotate("", xy=(xs[-1], ys[-1]), xytext=(xs[-2], ys[-2]), zorder=2,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.6,
                                "shrinkA": 0, "shrinkB": 14})


def _draw_nodes(ax, topo: Topology, xy: dict[str, tuple[float, float]]) -> None:
    style = {"host": ("s", "#ddf4ff"), "switch": ("D", "#fff8c5"), "router": ("o", "#dafbe1")}
    for n, kind in topo.nodes.items():
        marker, face = style.get(kind, ("o", "#eeeeee"))
        x, y = xy[n]
        ax.scatter([x], [y], s=900, marker=marker, c=face, edgecolors="#1b1f24", zorder=5)
        ax.text(x, y, n, ha="center", va="center", fontsize=8, zorder=6, fontweight="bold")


# `netrig graph FILE [-o out.svg|.png]`.
ScenarioReader = Callable[[str], tuple[Topology, dict[str, tuple[str, str]], str]]


def graph_command(file: str, out: str | None = None, fmt: str | None = None,
                  scenario: ScenarioReader | None = None) -> str:
    """Text to stdout without `out`; else writes out (its format by `fmt`, else by its
    suffix: .svg or .png) and returns its path. FILE is a topology file, or a scenario
    (a mapping with `flows:`) read by `scenario` (-> topology, flows, name; the
    command line passes `netrig.exp.spec.scenario.drawable`: topo stays below exp)."""
    import yaml

    from netrig.errors import NetrigError
    from netrig.topo import load as tload

    data = yaml.safe_load(tload.read(file))
    if isinstance(data, dict) and "flows" in data:
        if scenario is None:
            raise NetrigError(f"{file}: a scenario; draw its topology file, or use `netrig graph`")
        topo, flows, title = scenario(file)
    else:
        topo, flows, title = tload.load(file), None, None
    if out is None and fmt in (None, "text"):
        return text(topo, flows=flows, title=title)
    if out is None:
        raise NetrigError(f"--format {fmt} needs -o FILE (only text goes to the terminal)")
    kind = fmt or Path(out).suffix.lstrip(".").lower()
    if kind not in ("svg", "png"):
        raise NetrigError(f"-o {out}: draws .svg or .png (give one of those suffixes or --format)")
    data = draw(topo, flows=flows, fmt=kind, title=title)
    p = Path(out)
    if isinstance(data, str):
        p.write_text(data, encoding="utf-8")
    else:
        p.write_bytes(data)
    return str(p)
