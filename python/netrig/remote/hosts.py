"""A scenario's real hosts (`hosts:`), what the user declares about the path between
them (`path:`) and whether their clocks agree (`clocks:`).

    hosts:
      a: {ssh: alice@192.168.1.20, key: ~/.ssh/id_ed25519}   # the agent's keys when no key
      b: {ssh: bob@192.168.1.21, port: 2222, address: 10.0.0.2}
    path: {rate: 54Mbit, rtt: 3ms, loss: 0%}
    clocks: unknown        # or synced (NTP/PTP): one-way delays are shown only then

Theory reads a Topology, so the declared path becomes one that is never built
(`declared_topology`): two hosts joined by one link of the declared rate, loss and half
the RTT each way; more hosts joined through one switch `path` by links of the declared
rate, each a quarter of the RTT each way, with the loss split so that any two hosts see
the declared loss between them.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from netrig import units
from netrig.topo.model import NAME_CHARS, Topology, _check

SWITCH = "path"  # the declared topology's switch (more than two hosts)
_TARGET = re.compile(r"^(?:(?P<user>[^-@\s:/][^@\s:/]*)@)?(?P<host>[^-@\s/][^@\s/]*)$")  # no option
DEFAULT_CONNECT_TIMEOUT_S = 10.0


class HostSpec(BaseModel):
    """One real machine: how ssh reaches it, and where flows to it are sent."""

    model_config = ConfigDict(extra="forbid")
    ssh: str  # [user@]host, as ssh takes it (a name from ~/.ssh/config works too)
    port: int | None = Field(None, ge=1, le=65535)  # ssh's port (default: ~/.ssh/config's, else 22)
    key: str | None = None  # a private key file (-i, IdentitiesOnly); none: the agent's and ssh's own
    address: str | None = None  # where flows to this host go (default: the ssh host)
    perf: str | None = None  # netrig-perf's path on the host (default: its PATH, else copied there)
    options: dict[str, str | int] = Field(default_factory=dict)  # more `ssh -o KEY=VALUE`
    connect_timeout: str | int | None = None  # ssh's ConnectTimeout (10 s unless given)

    _positive = field_validator("connect_timeout")(
        classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))

    @field_validator("ssh")
    @classmethod
    def _target(cls, v: str) -> str:
        if not _TARGET.match(v.strip()):
            raise ValueError(f"'{v}' is not [user@]host (e.g. alice@192.168.1.20; a port goes in port:)")
        return v.strip()

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k, x in v.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", k) or any(c in str(x) for c in "\n\r"):
                raise ValueError(f"'{k}: {x}' is not an ssh option (KEY: VALUE, as ssh -o KEY=VALUE)")
        return v

    @property
    def user(self) -> str | None:
        m = _TARGET.match(self.ssh)
        return m.group("user") if m else None

    @property
    def host(self) -> str:
        m = _TARGET.match(self.ssh)
        return m.group("host") if m else self.ssh

    @property
    def to_address(self) -> str:
        """Where flows to this host are sent."""
        return self.address or self.host

    @property
    def connect_timeout_s(self) -> float:
        return DEFAULT_CONNECT_TIMEOUT_S if self.connect_timeout is None else units.seconds(self.connect_timeout)

    def label(self) -> str:
        """user@host:port, as errors name it (the port ssh would use if none is given)."""
        return f"{self.ssh}:{self.port or 22}"


class PathSpec(BaseModel):
    """What the user declares about the path between the hosts: theory's input."""

    model_config = ConfigDict(extra="forbid")
    rate: str | int
    rtt: str | int
    loss: str | int | float = "0%"

    _rates = field_validator("rate")(classmethod(lambda cls, v: _check(units.rate_bps, v)))
    _rtt = field_validator("rtt")(classmethod(lambda cls, v: _check(units.seconds_above_zero, v)))
    _loss = field_validator("loss")(classmethod(lambda cls, v: _check(_loss_fraction, v)))

    @property
    def rate_bps(self) -> float:
        return units.rate_bps(self.rate)

    @property
    def rtt_s(self) -> float:
        return units.seconds(self.rtt)

    @property
    def loss_fraction(self) -> float:
        return _loss_fraction(self.loss)


Clocks = Literal["unknown", "synced"]


def _loss_fraction(v: object) -> float:
    f = units.fraction(v)
    if not 0 <= f < 1:
        raise ValueError(f"{v}: a loss from 0% to under 100%")
    return f


def name_problem(name: str) -> str | None:
    """What is wrong with a host's name (it names a node of the declared topology)."""
    if not name or not set(name) <= NAME_CHARS or len(name) > 20:
        return "a host's name is 1-20 letters, digits or _"
    if name == SWITCH:
        return f"'{SWITCH}' names the declared path's switch: call the host something else"
    return None


def declared_topology(name: str, hosts: dict[str, HostSpec], path: PathSpec) -> Topology:
    """The topology that stands for the declared path (never built)."""
    topo = Topology(name or "hosts")
    for h in hosts:
        topo.host(h)
    ms = path.rtt_s * 1e3
    if len(hosts) == 2:
        a, b = hosts
        topo.link(a, b, rate=path.rate, delay=f"{ms / 2:g}ms", loss=_pct(path.loss_fraction))
        return topo
    topo.switch(SWITCH)
    # Two links between any two hosts: each carries half the path's loss (as a survival
    # probability) and a quarter of its RTT each way.
    each = 1 - math.sqrt(1 - path.loss_fraction)
    for h in hosts:
        topo.link(h, SWITCH, rate=path.rate, delay=f"{ms / 4:g}ms", loss=_pct(each))
    return topo


def _pct(f: float) -> str:
    return f"{f * 100:.6g}%"
