"""A report as a document: sections of blocks (tables, notes, preformatted text, figures,
drawings, folded details, bullet points), written as one self-contained HTML page
(inline CSS, figures as data URIs, no script, no external URL) or as Markdown.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrig.exp.render.draw import Figure


# A document: sections of blocks, written as HTML or Markdown.
@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    marked: set[int] = field(default_factory=set)  # rows to highlight


@dataclass
class Note:
    text: str
    warn: bool = False


@dataclass
class Pre:
    text: str


@dataclass
class Drawing:
    """An SVG drawing embedded as a data URI (the topology)."""

    title: str
    svg: str
    caption: str


@dataclass
class Details:
    """Blocks folded away under a one-line summary (<details> in HTML)."""

    summary: str
    blocks: list[Block]


Block = Table | Note | Pre | Figure | Drawing | Details | list[str]  # a list: bullet points


Section = tuple[str, list[Block]]


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #1b1f24; line-height: 1.45; }
h1 { font-size: 1.6em; }
h2 { border-bottom: 1px solid #d0d7de; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #d0d7de; padding: .3em .55em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr.far td { background: #ffe3e0; }
p.warn { background: #fff4d6; border-left: 4px solid #d4a72c; padding: .5em .8em; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: .85em; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; border: 1px solid #eaeef2; }
figcaption { font-size: .9em; color: #424a53; max-width: 900px; }
figure.topology img { max-height: 520px; }
details { margin: .8em 0; }
summary { cursor: pointer; font-weight: 600; }
td.why { font-size: .9em; }
"""


def _esc(s: Any) -> str:
    return html.escape(str(s))


def _html_block(b: Block) -> str:
    if isinstance(b, Table):
        head = "".join(f"<th>{_esc(h)}</th>" for h in b.head)
        rows = "".join(('<tr class="far">' if i in b.marked else "<tr>")
                       + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>\n"
                       for i, row in enumerate(b.rows))
        thead = f"<thead><tr>{head}</tr></thead>\n" if any(b.head) else ""
        return f"<table>\n{thead}<tbody>\n{rows}</tbody>\n</table>"
    if isinstance(b, Note):
        tag = '<p class="warn">' if b.warn else "<p>"
        return f"{tag}{_esc(b.text)}</p>"
    if isinstance(b, Pre):
        return f"<pre>{_esc(b.text)}</pre>"
    if isinstance(b, Drawing):
        data = base64.b64encode(b.svg.encode("utf-8")).decode("ascii")
        return (f'<figure class="topology"><img src="data:image/svg+xml;base64,{data}" '
                f'alt="{_esc(b.title)}"><figcaption><b>{_esc(b.title)}.</b> {_esc(b.caption)}'
                "</figcaption></figure>")
    if isinstance(b, Details):
        inner = "\n".join(_html_block(x) for x in b.blocks)
        return f"<details><summary>{_esc(b.summary)}</summary>\n{inner}\n</details>"
    if isinstance(b, Figure):  # (its bytes as drawn, or as read through safefs: nothing by path)
        data = base64.b64encode(b.data).decode("ascii")
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(b.title)}">'
                f"<figcaption><b>{_esc(b.title)}.</b> {_esc(b.caption)}</figcaption></figure>")
    return "<ul>\n" + "".join(f"<li>{_esc(x)}</li>\n" for x in b) + "</ul>"


def to_html(title: str, sections: list[Section]) -> str:
    """One self-contained page: inline CSS, figures as data URIs, every text escaped."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{_esc(title)}</h1>"]
    for head, blocks in sections:
        parts.append(f"<h2>{_esc(head)}</h2>")
        parts += [_html_block(b) for b in blocks]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _md_text(s: Any) -> str:
    return html.escape(str(s), quote=False).replace("|", "\\|").replace("\n", " ")


def _md_block(b: Block, base: Path) -> str:
    if isinstance(b, Table):
        def cell(c: str, marked: bool) -> str:
            return f"**{_md_text(c)}**" if marked and c else _md_text(c)

        lines = ["| " + " | ".join(map(_md_text, b.head)) + " |", "|" + " --- |" * len(b.head)]
        lines += ["| " + " | ".join(cell(c, i in b.marked) for c in row) + " |"
                  for i, row in enumerate(b.rows)]
        return "\n".join(lines)
    if isinstance(b, Note):
        return f"> **{_md_text(b.text)}**" if b.warn else _md_text(b.text)
    if isinstance(b, Pre):
        return f"```yaml\n{b.text.rstrip()}\n```"
    if isinstance(b, Drawing):
        return f"![{_md_text(b.title)}](figures/topology.svg)\n\n*{_md_text(b.title)}.* {_md_text(b.caption)}"
    if isinstance(b, Details):
        return "\n\n".join([f"**{_md_text(b.summary)}**", *(_md_block(x, base) for x in b.blocks)])
    if isinstance(b, Figure):
        rel = b.path.relative_to(base).as_posix()
        return f"![{_md_text(b.title)}]({rel})\n\n*{_md_text(b.title)}.* {_md_text(b.caption)}"
    return "\n".join(f"- {_md_text(x)}" for x in b)


def to_markdown(title: str, sections: list[Section], base: Path) -> str:
    """GitHub Markdown; figures as links relative to `base`."""
    parts = [f"# {_md_text(title)}"]
    for head, blocks in sections:
        parts.append(f"## {_md_text(head)}")
        parts += [_md_block(b, base) for b in blocks]
    return "\n\n".join(parts) + "\n"
