"""One rule for unit strings in both languages: the texts of tests/fixtures/units.json
read to the same values here as in netrig_core::units (its cargo test reads the file
too), or are refused by both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netrig import units
from netrig.link import spec

FIXTURE = json.loads((Path(__file__).resolve().parents[2] / "tests/fixtures/units.json").read_text())
PARSE = {
    "rate_bps": units.rate_bps,
    "duration_ns": lambda t: spec.KEYS["delay"].to_json(spec.KEYS["delay"].parse(t)),
    "probability": spec.KEYS["loss"].parse,
}


@pytest.mark.parametrize(("kind", "text", "want"),
                         [(k, t, w) for k in PARSE for t, w in FIXTURE[k]])
def test_the_shared_unit_fixture(kind: str, text: str, want: float | None) -> None:
    if want is None:
        with pytest.raises(units.UnitError):
            PARSE[kind](text)
    else:
        assert PARSE[kind](text) == pytest.approx(want, rel=1e-12)
