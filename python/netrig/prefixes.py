"""A lab prefix's form: it starts every namespace (and interface) name a lab creates.

Its own module, with nothing to import, so that what only needs the rule (a lab's state,
tc's shim run once per `tc` line) does not pay for the topology model's imports."""

from __future__ import annotations

import re

PREFIX_RE = re.compile(r"[a-z0-9][a-z0-9_]{0,14}")
