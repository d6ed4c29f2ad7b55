"""The one table of flow kinds (`KINDS`) and of the tools that make tcp and udp flows
(`TOOLS`), and a flow's outcome read through them (`Outcome`). A new kind is a module
giving its command line, parse, summary and series, and a line here; a new tool is a
module under kinds/tools and a line in TOOLS (and its keys in spec/model.py's
TOOL_LACKS).

    kind     made by            theory   graded by        raw output
    tcp      its tool           bulk     throughput_bps   flows/NAME.json (iperf2: .txt)
    udp      its tool           bulk     throughput_bps   flows/NAME.json (iperf2: .txt)
    probe    netrig-perf        rtt      rtt_ms_p50       flows/NAME.json
    fetch    netrig-perf        fetch    fetch_s_mean     flows/NAME.json
    ping     ping (iputils)     rtt      rtt_ms_p50       flows/NAME.txt
    web      curl, nginx        web      fetch_s_mean     flows/NAME.jsonl
    command  sh -c              none     command_s        flows/NAME.txt
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netrig.exp.kinds import bulk, command, perf, ping, web
from netrig.exp.kinds.base import Call, FlowOutput, Kind, Tool
from netrig.exp.kinds.tools import iperf2, iperf3
from netrig.exp.spec.model import FlowSpec

TOOLS: dict[str, Tool] = {t.name: t for t in (perf.TOOL, iperf3.TOOL, iperf2.TOOL)}


def tool_of(f: FlowSpec) -> Tool:
    """The program that makes a flow with a server: its `tool:` for tcp and udp,
    netrig-perf for probe and fetch."""
    return TOOLS[f.tool if f.kind in ("tcp", "udp") else "netrig-perf"]


def _bulk_argv(c: Call) -> list[str]:
    return tool_of(c.spec).client(c)


def _bulk_parse(o: FlowOutput) -> None:
    tool_of(o.spec).parse(o)


def _perf_parse(o: FlowOutput) -> None:
    perf.parse(o)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("tcp", _bulk_argv, _bulk_parse, bulk.summary, bulk.series, "bulk", "throughput_bps",
         ("retrans_pct", "retrans_pct_capture", "rtt_ms_mean"), served=True),
    Kind("udp", _bulk_argv, _bulk_parse, bulk.summary, bulk.series, "bulk", "throughput_bps",
         ("loss_pct", "jitter_ms"), served=True),
    Kind("probe", perf.client, _perf_parse, perf.probe_summary, perf.probe_series, "rtt", "rtt_ms_p50",
         ("rtt_ms_p99", "loss_pct"), served=True),
    Kind("fetch", perf.client, _perf_parse, perf.fetch_summary, perf.fetch_series, "fetch", "fetch_s_mean",
         ("fetch_s_p50", "fetch_s_max"), served=True),
    Kind("ping", ping.argv, ping.parse, ping.summary, ping.series, "rtt", "rtt_ms_p50",
         ("rtt_ms_p99", "loss_pct"), output="txt", limit_s=lambda f, d: d + 10),
    Kind("web", None, web.read, web.flow_summary, web.flow_series, "web", "fetch_s_mean",
         ("first_byte_s_mean", "fetch_s_max"), output="jsonl"),
    Kind("command", command.argv, command.parse, command.summary, command.series, None, "command_s",
         ("exit_code",), output="txt", limit_s=command.timeout_s),
)}


def kind_of(f: FlowSpec | str) -> Kind:
    """A flow's kind (by its spec or the kind's name)."""
    return KINDS[f if isinstance(f, str) else f.kind]


def output_ext(f: FlowSpec) -> str:
    """The extension of a flow's raw output in the run's directory (flows/NAME.EXT)."""
    k = kind_of(f)
    if k.served and tool_of(f).server_output != "json":
        return "txt"  # a tool whose client prints text (iperf2)
    return k.output


def plain_metric(kind: str) -> str:
    """The metric a flow of this kind is shown by when theory has nothing to say of it."""
    return KINDS[kind].metric if kind in KINDS else ""


def also(kind: str) -> tuple[str, ...]:
    """What else is worth a glance in a flow's row."""
    return KINDS[kind].also if kind in KINDS else ()


@dataclass
class Outcome(FlowOutput):
    """What a flow's process left, read by its kind: `parse()` once (what cannot be
    read becomes `error`, never an exception), `summary()` its row in the tidy CSV
    (measured numbers only; theory is added by the runner), `series()` its time series
    (seconds from the run's start)."""

    def parse(self) -> None:
        kind_of(self.spec).parse(self)

    def summary(self) -> dict[str, Any]:
        return kind_of(self.spec).summary(self)

    def series(self) -> list[dict[str, Any]]:
        """Samples: {"t": s from the run's start, ...} in time order."""
        return kind_of(self.spec).series(self)

    def advertised_window(self) -> float | None:
        return bulk.advertised_window(self)

    def timed_out(self, measured: dict[str, Any]) -> str | None:
        return bulk.timed_out(self, measured)

    def ping_samples(self) -> list[tuple[float, float]]:
        return ping.samples(self)
