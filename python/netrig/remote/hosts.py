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

A scenario may come from someone else and netrig may run it as root, so `options:` (ssh
-o) refuses what would make this machine run a command or load code (ProxyCommand,
LocalCommand, PermitLocalCommand, KnownHostsCommand, Match exec, PKCS11Provider, ...),
in either of ssh's forms, whatever the case, and smuggled in a value, and what would
make it write a file, listen, forward or make a device here (UserKnownHostsFile other
than /dev/null, LocalForward, Tunnel, ForwardAgent, ...); such options belong in the
user's own ~/.ssh/config, which ssh reads as ever.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from netrig import units
from netrig.topo.model import NAME_CHARS, Topology, _check

SWITCH = "path"  # the declared topology's switch (more than two hosts)
_TARGET = re.compile(r"^(?:(?P<user>[^-@\s:/][^@\s:/]*)@)?(?P<host>[^-@\s/][^@\s/]*)$")  # no option
DEFAULT_CONNECT_TIMEOUT_S = 10.0

# ssh options a scenario may not set (lower case, as ssh matches them): why, and what
# to do instead.
_CONFIG = "put it in your own ~/.ssh/config, which ssh reads as ever"
REFUSED_OPTIONS = {
    "proxycommand": f"runs a command on this machine to reach the host: give ProxyJump: HOST, or {_CONFIG}",
    "localcommand": f"runs a command on this machine after connecting: {_CONFIG}",
    "permitlocalcommand": f"lets LocalCommand (and the ~! escape) run commands on this machine: {_CONFIG}",
    "knownhostscommand": f"runs a command on this machine to list the host's keys: {_CONFIG}",
    "match": f"opens a Match block, whose 'exec' runs a command on this machine: {_CONFIG}",
    "host": f"opens a Host block: {_CONFIG}",
    "include": f"reads more configuration files, which may run commands: {_CONFIG}",
    "pkcs11provider": f"loads a library into ssh on this machine: {_CONFIG}",
    "securitykeyprovider": f"loads a library into ssh on this machine: {_CONFIG}",
    "xauthlocation": f"names a program ssh runs on this machine: {_CONFIG}",
    "enablesshkeysign": f"runs ssh-keysign (a setuid program) on this machine: {_CONFIG}",
    "updatehostkeys": f"lets the host rewrite this machine's known_hosts files: {_CONFIG}",
    "localforward": f"opens a listening socket on this machine: {_CONFIG}",
    "remoteforward": f"lets the host reach ports of this machine: {_CONFIG}",
    "dynamicforward": f"opens a SOCKS proxy on this machine: {_CONFIG}",
    "gatewayports": f"opens forwarded ports to the network: {_CONFIG}",
    "streamlocalbindunlink": f"removes a file on this machine before a forwarding binds it: {_CONFIG}",
    "tunnel": f"makes a tun device on this machine: {_CONFIG}",
    "tunneldevice": f"makes a tun device on this machine: {_CONFIG}",
    "forwardagent": f"lends this machine's ssh agent to the host: {_CONFIG}",
    "forwardx11": f"lets the host open windows on this machine's display: {_CONFIG}",
    "forwardx11trusted": f"lets the host open windows on this machine's display: {_CONFIG}",
    "identityagent": f"talks to a socket on this machine as its ssh agent: {_CONFIG}",
    "remotecommand": "netrig chooses what runs on the host",
    "requesttty": "netrig's commands run without a terminal",
    "sessiontype": "netrig's commands run in an ssh session of their own",
    "stdinnull": "netrig hands a flow server its key on standard input",
    "forkafterauthentication": "netrig waits for each ssh it starts",
    "controlmaster": "netrig runs its own ControlMaster for each host",
    "controlpath": "netrig runs its own ControlMaster for each host",
    "controlpersist": "netrig runs its own ControlMaster for each host, and stops it after the run",
}
# Options a scenario may give only these values of (what a lab's throwaway hosts need):
# ssh appends a host's key to the file named, as whoever runs netrig (root).
_ONLY = {"userknownhostsfile": ({"/dev/null", "none"},
                                f"makes ssh append host keys to that file on this machine; "
                                f"give /dev/null or none, or {_CONFIG}")}
# Options whose value ssh may hand to another ssh's command line (a jump host, a host
# name, a user): a value starting with '-' would be read as an option there.
_HOSTLIKE = {"proxyjump", "hostname", "user", "hostkeyalias"}
_KEYWORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PARTS = re.compile(r"[\s=]+")


def option_problem(key: str, value: object = None) -> str | None:
    """Why an ssh option (KEY: VALUE, as ssh -o KEY=VALUE) cannot be given in a
    scenario; None if it can. ssh takes `Key=value` and `Key value`, in any case. Without
    a value, the key alone is checked."""
    text = "" if value is None else str(value)
    words = [w for w in _PARTS.split(key.strip()) if w]
    name = words[0] if words else key
    why = REFUSED_OPTIONS.get(name.lower())
    if why is not None:
        return f"{name} {why}"
    if len(words) != 1 or not _KEYWORD.fullmatch(name):
        return f"'{key}' is not an ssh option keyword (KEY: VALUE, as ssh -o KEY=VALUE)"
    if any(c in text for c in "\n\r\0"):
        return f"{name}: its value spans lines (ssh reads one option a line)"
    if value is not None and name.lower() in _ONLY and text.strip().lower() not in _ONLY[name.lower()][0]:
        return f"{name}: '{text}' {_ONLY[name.lower()][1]}"
    for w in _PARTS.split(text.strip()) if len(_PARTS.split(text.strip())) > 1 else []:
        if w.lower() in REFUSED_OPTIONS:
            return f"{name}: its value carries another option, {w}, which {REFUSED_OPTIONS[w.lower()]}"
    if name.lower() in _HOSTLIKE and any(p.split("@")[-1].startswith("-") or p.startswith("-")
                                         for p in re.split(r"[,\s]+", text.strip()) if p):
        return f"{name}: '{text}': a host or user that starts with '-' would be read as an option"
    return None


def _option_key(key: str) -> str:
    if (why := option_problem(key)) is not None:
        raise ValueError(why)
    return key


class HostSpec(BaseModel):
    """One real machine: how ssh reaches it, and where flows to it are sent."""

    model_config = ConfigDict(extra="forbid")
    ssh: str  # [user@]host, as ssh takes it (a name from ~/.ssh/config works too)
    port: int | None = Field(None, ge=1, le=65535)  # ssh's port (default: ~/.ssh/config's, else 22)
    key: str | None = None  # a private key file (-i, IdentitiesOnly); none: the agent's and ssh's own
    address: str | None = None  # where flows to this host go (default: the ssh host)
    perf: str | None = None  # netrig-perf's path on the host (default: its PATH, else copied there)
    # more `ssh -o KEY=VALUE` (not those that run commands here: REFUSED_OPTIONS)
    options: dict[Annotated[str, AfterValidator(_option_key)], str | int] = Field(default_factory=dict)
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
            if (why := option_problem(k, x)) is not None:
                raise ValueError(why)
        return v

    @field_validator("key", "address")
    @classmethod
    def _not_an_option(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("-") or any(c in v for c in "\n\r\0")):
            raise ValueError(f"'{v}' starts with '-' or spans lines: a file or an address, not an option")
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
