"""The command kind: a user's shell command in the flow's node (`sh -c`), its time and
exit code; stopped at its duration when it has one (not a failure then), else at its
`timeout` (60 s unless given). No theory.
"""

from __future__ import annotations

from typing import Any

from netrig.exp.kinds.base import Call, FlowOutput


def argv(c: Call) -> list[str]:
    return ["sh", "-c", c.spec.command or "true"]


def timeout_s(f, duration: float) -> float:
    """How long it may run: its duration when it has one, else its timeout."""
    return duration if f.duration is not None else f.seconds("timeout", 60.0)


def parse(o: FlowOutput) -> None:
    if o.spec.duration is not None and o.error and "did not finish" in o.error:
        o.error = None  # a command with a duration is stopped at its end


def summary(o: FlowOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "error" if o.error else "ok", "error": o.error or ""}
    out.update({"command_s": o.end_s - o.start_s, "exit_code": o.code})
    if o.code not in (0, None) and not o.error:
        out["status"], out["error"] = "error", f"exit code {o.code}"
    return out


def series(o: FlowOutput) -> list[dict[str, Any]]:
    return []
