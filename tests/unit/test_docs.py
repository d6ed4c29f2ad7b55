"""The documentation's generated reference (scripts/docs_reference.py) cannot drift from
the code: every command and option of the parser, every key of the topology and
scenario models and every link key appear in it, each model key has its line in DOCS
and DOCS names no key that is gone; the site builds strict and offline (mkdocs.yml). The
build itself is scripts/test.sh's (`mkdocs build --strict`)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts/docs_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ref = _load()


def test_every_command_and_option_of_the_parser_is_in_the_reference():
    from netrig.cli import NEEDS_ROOT
    from netrig.cli.parser import ORDER, build

    page = ref.cli_page()
    _, commands = build()
    for name in ORDER:
        assert f"\n## {name}\n" in page, name
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for a in commands[name].parser._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            for opt in a.option_strings:
                assert opt in section, (name, opt)
        for example in commands[name].parser.examples:
            assert example in section, (name, example)
        assert ("Needs root" in section) == (name in NEEDS_ROOT), name


def test_every_model_key_has_its_line_and_no_line_names_a_gone_key():
    documented = {f"{m.__name__}.{k}" for m in ref.documented_models() for k in ref.fields(m)}
    link_keys = {f"LinkSpec.{k}" for k in ref.fields(ref._link_model())} - {
        f"LinkSpec.{k}" for k in ref.link_only_keys()}
    wanted = documented - link_keys  # a link's shaping keys are the link page's (schema.json)
    assert sorted(wanted - set(ref.DOCS)) == []
    assert sorted(set(ref.DOCS) - wanted) == []


def test_a_key_without_a_line_stops_the_build(monkeypatch):
    monkeypatch.delitem(ref.DOCS, "FlowSpec.cc")
    with pytest.raises(ref.ReferenceError, match="FlowSpec.cc"):
        ref.scenario_page()


def test_every_scenario_key_is_in_the_scenario_page_with_its_range_and_default():
    from netrig.exp.spec.model import EventSpec, FlowSpec, MonitorSpec, ScenarioFile

    page = ref.scenario_page()
    for model in (ScenarioFile, FlowSpec, MonitorSpec, EventSpec):
        for key in ref.fields(model):
            assert f"| `{key}` |" in page, (model.__name__, key)
    row = next(line for line in page.splitlines() if line.startswith("| `repeat` |"))
    assert "1 .. 1000" in row and "`1`" in row  # Field(1, ge=1, le=1000)
    row = next(line for line in page.splitlines() if line.startswith("| `start` |"))
    assert "duration" in row and "&gt;= 0" in row and "`0s`" in row  # seconds_not_negative
    row = next(line for line in page.splitlines() if line.startswith("| `kind` |"))
    assert "`tcp`" in row and "`command`" in row  # the Literal's choices


def test_topology_page_reads_units_from_the_validators():
    page = ref.topology_page()
    hello = next(line for line in page.splitlines() if line.startswith("| `hello` |"))
    assert "whole seconds" in hello and "1 .. 65535 s" in hello and "`10s`" in hello
    spf = next(line for line in page.splitlines() if line.startswith("| `spf_hold` |"))
    assert "0 .. 600000 ms" in spf
    for key in ("name", "prefix", "backend", "addressing", "nodes", "links", "a_to_b", "cost",
                "loss_bad", "reference_bandwidth", "connect_retry"):
        assert f"| `{key}` |" in page, key


def test_every_link_key_and_discipline_of_the_schema_is_in_the_link_page():
    schema = json.loads((ROOT / "python/netrig/link/schema.json").read_text())
    page = ref.link_page()
    for k in schema["keys"]:
        assert f"| `{k['name']}` |" in page, k["name"]
    for d in schema["disciplines"]:
        assert f"### `{d['name']}`" in page
        for p in d["params"]:
            assert f"| `{p['name']}` |" in page, (d["name"], p["name"])
    delay = next(line for line in page.splitlines() if line.startswith("| `delay` |"))
    assert "0 .. 3600s" in delay and "duration" in delay


CLAP = """\
iperf3-compatible traffic tool with latency probes

Usage: netrig-perf [OPTIONS]

Options:
  -s, --server
          Run as a server
  -c, --client <HOST>
          Run as a client, connecting to HOST
      --max-tests-per-source <N>
          Server, netrig only: tests served at once from one address (IPv6: per /64),
          below --max-tests
  -h, --help
          Print help
"""


def test_netrig_perf_options_are_read_from_claps_help():
    opts = dict(ref.perf_options(CLAP))
    assert opts["-s, --server"] == "Run as a server"
    assert opts["-c, --client HOST"] == "Run as a client, connecting to HOST"
    assert opts["--max-tests-per-source N"].endswith("(IPv6: per /64), below --max-tests")
    page = ref.perf_page(CLAP)
    assert "| `--max-tests-per-source N` |" in page and "iperf3-compatible" in page
    with pytest.raises(ref.ReferenceError):
        ref.perf_options("Usage: netrig-perf\n")


def test_table_cells_keep_code_and_escape_markup():
    assert ref.md("a | b <HOST> *x* `a_to_b | c`") == "a \\| b &lt;HOST&gt; \\*x\\* `a_to_b \\| c`"
    assert ref.md("two\n  lines") == "two lines"


def test_the_site_is_strict_offline_and_lists_every_generated_page():
    text = (ROOT / "mkdocs.yml").read_text()
    conf = yaml.load(text, Loader=yaml.BaseLoader)  # (!!python tags: none here)
    assert conf["strict"] == "true"
    assert conf["theme"]["font"] == "false"  # Material would fetch Google Fonts
    assert conf["hooks"] == ["scripts/docs_reference.py"]
    assert [p for p in conf.get("plugins", []) if p not in ("search",)] == []  # none fetches
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$", text, re.M)
    for uri in ref.PAGES:
        assert uri in nav, uri
    for uri in nav:  # the hand-written pages exist; the generated ones are not committed
        assert (ROOT / "docs" / uri).is_file() != (uri in ref.PAGES), uri
