"""What theory expects of a path: the numbers a measurement is compared with.

Owns the textbook formulas (`formulas`: goodput after headers, base RTT, BDP, W/RTT,
Mathis, UDP loss), max-min fair shares and Jain's index (`fairness`), their
application to a planned topology (`path.analyse` -> `PathReport`), and the text of
`netrig explain` (`explain.explain_text`). Everything is pure computation in SI units
(bit/s, seconds, bytes); nothing here measures, touches the system or reads a clock.

Does not own the topology or its routes (`netrig.topo`: this package only reads a
`Plan`), parsing of unit strings (`netrig.units`), nor the comparison of theory with
results (the experiment runner and reports call in here).
"""

from netrig.theory.explain import explain_text
from netrig.theory.fairness import Flow, Share, jain, max_min_fair
from netrig.theory.formulas import (
    ETH_HEADER,
    ETH_WIRE,
    MATHIS_C,
    Expectation,
    Framing,
    Leg,
    TheoryError,
    base_rtt,
    bdp,
    combined_loss,
    framing,
    goodput,
    mathis,
    padhye,
    queue_delay,
    tcp_expected,
    tcp_mss,
    udp_fragments,
    udp_loss,
    window_limit,
)
from netrig.theory.path import FlowShare, HopInfo, PathReport, analyse, parse_flow

__all__ = [
    "ETH_HEADER", "ETH_WIRE", "MATHIS_C", "Expectation", "Flow", "FlowShare", "Framing",
    "HopInfo", "Leg", "PathReport", "Share", "TheoryError", "analyse", "base_rtt", "bdp",
    "combined_loss", "explain_text", "framing", "goodput", "jain", "mathis", "max_min_fair", "padhye",
    "parse_flow", "queue_delay", "tcp_expected", "tcp_mss", "udp_fragments", "udp_loss",
    "window_limit",
]
