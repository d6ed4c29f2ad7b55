"""report.html in a real browser: headless Chromium renders the page with every figure
decoded (naturalWidth of each <img> = its PNG's width) and the summary table in place,
the headline table on the first screen, the topology drawn and a flagged row's
explanation shown, and its screenshot is a real picture. The results directory is the synthetic one of
tests/unit/test_report.py. Needs a chromium binary (scripts/install.sh installs it);
the screenshot is kept in $NETRIG_ARTIFACTS when that is set."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from netrig.exp.render import report

pytestmark = pytest.mark.net
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Appended to a copy of the report (the report itself has no scripts): once every image
# has loaded, write their natural widths where --dump-dom sees them.
PROBE = """<script>
window.addEventListener("load", () => {
  const w = Array.from(document.images, i => i.complete ? i.naturalWidth : -1);
  document.body.setAttribute("data-widths", w.join(","));
});
</script>"""


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    pytest.skip(f"no headless browser: none of {', '.join(BROWSERS)} is on PATH "
                "(apt-get install chromium)")


def chromium(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def synthetic_results(root: Path) -> Path:
    path = Path(__file__).resolve().parents[1] / "unit" / "test_report.py"
    spec = importlib.util.spec_from_file_location("netrig_report_synthetic", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_results(root)


def png_width(path: Path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[str, Path, Path]:
    exe = browser()
    tmp = tmp_path_factory.mktemp("browser")
    out = synthetic_results(tmp / "results")
    return exe, tmp, report.build(out)


def test_dom_has_every_figure_decoded_and_the_table(built):
    exe, tmp, page = built
    probe = tmp / "probe.html"
    html = page.read_text(encoding="utf-8")
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    p = chromium(exe, tmp, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    dom = p.stdout
    assert "<h2>Far from theory</h2>" in dom, f"no report in the DOM; stderr: {p.stderr[-2000:]}"
    pngs = sorted((page.parent / "figures").glob("*.png"))
    imgs = re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="([^"]*)"', dom)
    assert len(imgs) == len(pngs) == 9
    widths = re.search(r'data-widths="([0-9,-]*)"', dom)
    assert widths, "the probe script did not run"
    got = [int(w) for w in widths.group(1).split(",")]
    # the figures' PNGs, and the topology's SVG drawing first
    assert sorted(got[1:]) == sorted(png_width(p) for p in pngs) and min(got) > 0
    assert "<td>9.5 ± 0.896 Mbit/s (n=3)</td>" in dom
    assert re.search(r'<tr class="far"><td>window=64KB</td><td>bulk</td>', dom)


# Where the new sections land on the first screen (1280 × 900): the headline table's
# bottom, the topology drawing's rendered size, a flagged row's explanation's height.
LAYOUT = """<script>
window.addEventListener("load", () => {
  const table = document.querySelector("table");
  const topo = document.querySelector("figure.topology img");
  const why = Array.from(document.querySelectorAll("li")).find(li => li.textContent.includes("Why:"));
  const b = document.body;
  b.setAttribute("data-first-h2", document.querySelector("h2").textContent);
  b.setAttribute("data-table-bottom", Math.round(table.getBoundingClientRect().bottom));
  b.setAttribute("data-screen", window.innerHeight);
  b.setAttribute("data-topo", topo ? topo.naturalWidth + "x" + topo.getBoundingClientRect().height : "none");
  b.setAttribute("data-why", why ? why.getBoundingClientRect().height : -1);
});
</script>"""


def test_headline_table_on_the_first_screen_topology_drawn_and_why_visible(built):
    exe, tmp, page = built
    probe = tmp / "layout.html"
    html = page.read_text(encoding="utf-8")
    probe.write_text(html.replace("</body>", LAYOUT + "</body>"), encoding="utf-8")
    p = chromium(exe, tmp, "--window-size=1280,900", "--virtual-time-budget=10000", "--dump-dom",
                 probe.as_uri())
    dom = p.stdout
    got = dict(re.findall(r'data-(first-h2|table-bottom|screen|topo|why)="([^"]*)"', dom))
    assert got, f"the layout probe did not run; stderr: {p.stderr[-2000:]}"
    assert got["first-h2"] == "Results"
    assert 0 < int(got["table-bottom"]) <= int(got["screen"]), got  # the whole table, unscrolled
    width, height = got["topo"].split("x")
    assert int(width) > 300 and float(height) > 100, got  # the SVG decoded and drawn
    assert float(got["why"]) > 0, got  # the explanation is not folded away
    assert "Why: " in dom and "<h2>Topology</h2>" in dom


def test_screenshot_is_a_real_picture(built):
    exe, tmp, page = built
    where = Path(os.environ.get("NETRIG_ARTIFACTS") or tmp)
    where.mkdir(parents=True, exist_ok=True)
    shot = where / "report.png"
    shot.unlink(missing_ok=True)
    p = chromium(exe, tmp, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert shot.is_file(), f"no screenshot; stderr: {p.stderr[-2000:]}"
    assert shot.stat().st_size > 10_000
    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    assert float(np.std(pixels[..., :3])) > 0.01  # not one flat colour
