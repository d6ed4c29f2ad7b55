"""Figures read back: the plotted series (matplotlib's Line2D data of each figure drawn)
and the files written. Synthetic results directories as test_report writes them; no
root, no network."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from netrig.exp.analysis.results import load
from netrig.exp.record.files import read_jsonl, write_jsonl
from netrig.exp.render import axes, draw, figures
from netrig.theory import analyse
from netrig.topo.plan import make_plan
from PIL import Image
from test_report import SCENARIO, make_results


@pytest.fixture
def drawn(monkeypatch) -> dict[str, Axes]:
    """Every axes figures.py draws, by its title; a figure of panels (one per point) by
    its own title, the first panel, and each panel as `TITLE [PANEL]`."""
    axes: dict[str, Axes] = {}

    class Recording(Figure):
        def savefig(self, *a, **k):
            sup = self._suptitle.get_text() if self._suptitle is not None else ""
            for ax in self.axes:
                if ax.get_title():
                    axes[ax.get_title()] = ax
                elif sup:
                    axes.setdefault(sup, ax)
                    axes[f"{sup} [{ax.get_title(loc='left')}]"] = ax
            return super().savefig(*a, **k)

    monkeypatch.setattr(draw, "MplFigure", Recording)
    return axes


def _one(axes: dict[str, Axes], start: str) -> Axes:
    found = [ax for title, ax in axes.items() if title.startswith(start)]
    assert found, f"no figure titled {start!r}: {sorted(axes)}"
    return found[0]


def _refs(ax: Axes) -> dict[str, float]:
    """Horizontal reference lines: legend label -> y."""
    return {ln.get_label(): float(ln.get_ydata()[0]) for ln in ax.lines
            if len(set(ln.get_ydata())) == 1 and len(ln.get_ydata()) == 2}


def _panel(axes: dict[str, Axes], start: str, point: str) -> Axes:
    """The panel of a figure of panels (a panel per point) whose point names `point`."""
    found = [ax for title, ax in axes.items() if title.startswith(start) and "[" in title
             and point in title.split("[", 1)[1]]
    assert found, f"no panel {point!r} of {start!r}: {sorted(axes)}"
    return found[0]


def _edge(ax: Axes) -> list[str]:
    """References named at the axis edge (off scale), as written."""
    return [t.get_text() for t in ax.texts if t.get_text().endswith(("↑", "→"))]


def _theory():
    from netrig.exp.spec.scenario import loads_scenario

    p = loads_scenario(yaml.safe_dump(SCENARIO)).points[0]
    return analyse(make_plan(p.topology), "h1", "h2")


def test_throughput_over_time_is_what_the_bottleneck_delivered(tmp_path, drawn):
    out = make_results(tmp_path / "r")  # the sender wrote 9.1–9.8 Mbit/s; s0→h2 delivered 10
    figures.make_figures(out)
    ax = _panel(drawn, "throughput of bulk", "16KB")  # a panel per point
    data = [ln for ln in ax.lines if ln.get_label() == "bulk: delivered by s0→h2"]
    assert data, [ln.get_label() for ln in ax.lines]
    ys = [y for y in data[0].get_ydata() if not math.isnan(y)]
    assert ys and all(abs(y - 10.0) < 1e-6 for y in ys)
    assert len(data[0].get_xdata()) >= 40  # 100 ms bins over 5 s (10 Mbit/s: ±1.2 %), not 0.5 s writes


def test_a_sample_without_departures_is_a_gap_not_zero(tmp_path, drawn):
    out = make_results(tmp_path / "r")
    path = out / "runs" / "p000-r00" / "series" / "monitor-0.jsonl"
    rows = read_jsonl(path)
    for r in rows:
        idle = r["dir"] == "a_to_b" and 100 <= round(r["t"] * 100) < 110
        r["dequeued"] = 0 if idle else 3
        if idle:
            r["sojourn_ms"] = 0.0
    write_jsonl(path, rows)
    figures.make_figures(out)
    ax = _panel(drawn, "queue sojourn time of s0→h2", "16KB")
    line = next(ln for ln in ax.lines if ln.get_label() == "s0→h2")
    by_t = dict(zip(line.get_xdata(), line.get_ydata(), strict=True))
    assert all(math.isnan(by_t[k / 100]) for k in range(100, 110))
    assert not math.isnan(by_t[1.2]) and by_t[1.2] > 0


def test_every_time_series_has_theorys_references(tmp_path, drawn):
    out = make_results(tmp_path / "r")
    figures.make_figures(out)
    r = _theory()
    mss, frame = r.tcp.payload, r.data_frame
    bdp = r.bdp_bytes / frame
    queue = 1000  # droptail's default limit on a rated link without `queue`
    cwnd = _refs(_one(drawn, "congestion window of bulk"))
    assert pytest.approx(cwnd[f"BDP {bdp * mss / 1e3:.4g} KB ({bdp:.3g} segments)"]) == bdp * mss / 1e3
    # BDP + a 1000-packet queue is far above the window: named at the top edge, not drawn
    assert not [k for k in cwnd if k.startswith("BDP + queue")]
    assert _edge(_one(drawn, "congestion window of bulk")) == [
        f"BDP + queue {(bdp + queue) * mss / 1e3:.4g} KB ({bdp + queue:.4g} segments) ↑"]
    rtt = _refs(_one(drawn, "RTT of rtt"))
    assert rtt[f"idle RTT {r.base_rtt_s * 1e3:.4g} ms"] == pytest.approx(r.base_rtt_s * 1e3)
    full = r.base_rtt_s + r.queue_delay_s
    # a full 1000-packet queue is far above what the data reached: each named at the top edge
    assert f"full-queue RTT {full * 1e3:.4g} ms ↑" in _edge(_one(drawn, "RTT of rtt"))
    assert "queue limit of s0→h2 1000 packets ↑" in _edge(_one(drawn, "queue length of s0→h2"))
    soj = _edge(_one(drawn, "queue sojourn time of s0→h2"))
    assert soj == [f"a full queue of s0→h2 {queue * frame * 8 / 10e6 * 1e3:.4g} ms ↑"]
    thr = _refs(_one(drawn, "throughput of bulk"))
    assert thr["link rate of s0→h2 10 Mbit/s"] == 10.0
    assert thr[f"TCP goodput there {r.tcp_goodput_bps / 1e6:.4g} Mbit/s"] == pytest.approx(
        r.tcp_goodput_bps / 1e6)


def test_an_aqm_adds_its_target(tmp_path, drawn):
    out = make_results(tmp_path / "r")
    scen = yaml.safe_load((out / "scenario.yaml").read_text())
    scen["topology"]["links"][1]["aqm"] = {"type": "pie", "target": "15ms"}
    (out / "scenario.yaml").write_text(yaml.safe_dump(scen))
    figures.make_figures(out)
    assert _refs(_one(drawn, "queue sojourn time of s0→h2"))["pie's target 15 ms"] == 15.0
    r = _theory()
    rtt = _refs(_one(drawn, "RTT of rtt"))
    assert rtt[f"idle RTT + pie's target {r.base_rtt_s * 1e3 + 15:.4g} ms"] == pytest.approx(
        r.base_rtt_s * 1e3 + 15)


def test_sweep_axes_are_words_with_units(tmp_path, drawn):
    figures.make_figures(make_results(tmp_path / "r"))
    assert _one(drawn, "bulk: throughput vs").get_xlabel() == "TCP window of bulk (KB)"
    assert axes.axis("links.h1-h2.delay", ["5ms", "50ms"]).label == \
        "one-way delay of link h1-h2 (ms)"
    assert axes.axis_words("links.s0-h2.aqm") == "queue discipline of link s0-h2"
    assert axes.axis_words("flows.v.rate") == "offered rate of v"


def test_legends_sit_outside_the_axes(tmp_path, drawn):
    figures.make_figures(make_results(tmp_path / "r"))
    for title, ax in drawn.items():
        legend = ax.get_legend()
        if legend is not None:
            ax.figure.canvas.draw()
            box, inside = legend.get_window_extent(), ax.get_window_extent()
            assert box.x0 >= inside.x1, title


def test_svg_beside_png_at_print_resolution_and_pdf_on_request(tmp_path, monkeypatch):
    monkeypatch.delenv("NETRIG_FIGURE_FORMATS", raising=False)  # (tests draw PNG only: conftest)
    out = make_results(tmp_path / "r")
    drawn = figures.make_figures(out)
    pngs = sorted((out / "figures").glob("*.png"))
    assert pngs and sorted(p.with_suffix(".svg") for p in pngs) == sorted(
        (out / "figures").glob("*.svg"))
    for p in pngs:
        assert Image.open(p).info["dpi"][0] >= 199.9
    assert all(f.path.suffix == ".png" and f.path.with_suffix(".svg") in f.files for f in drawn)
    figures.make_figures(out, formats=("png", "svg", "pdf"))
    assert len(list((out / "figures").glob("*.pdf"))) == len(pngs)
    with pytest.raises(draw.FormatError, match="jpg"):
        figures.make_figures(out, formats=("jpg",))


def _with_delay(out: Path, delay: str) -> Path:
    scen = yaml.safe_load((out / "scenario.yaml").read_text())
    scen["topology"]["links"][1]["delay"] = delay
    (out / "scenario.yaml").write_text(yaml.safe_dump(scen))
    return out


def test_plot_draws_two_directories_on_one_axes(tmp_path, drawn):
    from netrig.exp.render.plot import plot_command

    a = _with_delay(make_results(tmp_path / "a"), "5ms")
    b = _with_delay(make_results(tmp_path / "b", scale=0.5), "20ms")
    written = plot_command([a, b], ["rtt", "cwnd"], tmp_path / "fig.svg", "svg")
    assert written == [tmp_path / "fig-rtt.svg", tmp_path / "fig-cwnd.svg"]
    assert all(p.stat().st_size > 0 for p in written)
    ax = _one(drawn, "RTT")
    labels = [ln.get_label() for ln in ax.lines if len(ln.get_xdata()) > 2]
    assert any("delay=5ms" in x for x in labels) and any("delay=20ms" in x for x in labels)
    assert len(labels) == 4  # 2 directories × 2 points


def test_compare_labels_three_directories_by_what_differs(tmp_path, drawn):
    from netrig.exp.render.plot import labelled

    dirs = [_with_delay(make_results(tmp_path / n), d)
            for n, d in (("x", "5ms"), ("y", "10ms"), ("z", "40ms"))]
    sets = labelled([load(d) for d in dirs])
    assert [n for n, _ in sets] == [f"topology.links.s0-h2.delay={d}" for d in ("5ms", "10ms", "40ms")]
    done = figures.compare_figures(sets, tmp_path / "cmp")
    assert {f.kind for f in done} >= {"sweep", "timeseries"}
    curve = _one(drawn, "bulk: throughput vs")
    for name, _ in sets:
        assert any(ln.get_label().startswith(name) for ln in curve.get_legend().get_lines()) or \
            any(t.get_text().replace("\n", "").replace("  ", " ").startswith(name[:20])
                for t in curve.get_legend().get_texts())
    ts = _one(drawn, "RTT at")
    assert len([ln for ln in ts.lines if len(ln.get_xdata()) > 2]) == 3


def test_a_stall_in_the_samples_is_a_gap_not_a_line():
    """netrig-link stalled for 0.3 s (no 10 ms sample): the line breaks there."""
    import math

    from netrig.exp.analysis.series import gaps

    t = [0.0, 0.01, 0.02, 0.03, 0.33, 0.34]
    got_t, got_y = gaps(t, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert got_t == [0.0, 0.01, 0.02, 0.03, 0.18, 0.33, 0.34]
    assert math.isnan(got_y[4]) and [y for y in got_y if not math.isnan(y)] == [1, 2, 3, 4, 5, 6]
    assert gaps([0.0, 0.01, 0.02, 0.03], [1, 2, 3, 4]) == ([0.0, 0.01, 0.02, 0.03], [1, 2, 3, 4])
