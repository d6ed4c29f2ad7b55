"""tc's command line, read as a change of one netrig link direction (pure: no process).

Owns: reading `tc qdisc add|change|replace|link|delete dev IF root|parent X ...` and
`tc class add|change|replace dev IF ... htb rate R` as tc(8) reads them (iproute2 6.1,
tc/q_*.c: its abbreviations, `matches()`, units and defaults) into what they change on
one link direction, in the topology's keys (`netrig.link.spec.resolve` takes the
result); and `show`, the lines `tc [-s] qdisc show` prints for a direction, from its
keys and netrig-link's counters. `netrig.lab.tcshim` finds the direction and applies it.

netrig-link's direction is one rate stage, one delay/loss stage (delay, jitter, loss,
duplicate, corrupt, reorder) and one queue (a discipline and its limit). A qdisc line
sets the stages its kind owns and keeps the others, so the tree a Mininet script builds
(htb at the root for the rate, netem under it, red under that) lands stage by stage, and
seed 004's `tc qdisc add dev s0-eth2 root pie limit 1000 target 20ms` on a 10 Mbit/s,
5 ms link keeps 10 Mbit/s and 5 ms and puts PIE on the queue:

- netem: the delay/loss stage whole (what the line leaves out is off, as the kernel's
  netem_change resets it); the rate stage only if it gives `rate`; the queue's limit
  only if it gives `limit` (netrig's queue is already there, with its own limit).
- pie, codel, fq_codel, red, pfifo, bfifo: the queue (discipline and limit; a limit left
  out is the discipline's default). `change` of the discipline that runs keeps the
  parameters the line leaves out, as the kernel does for pie, codel and fq_codel.
- tbf: the rate stage and the queue's limit (`limit`, or `latency` as tc turns it into
  one: rate x latency + burst bytes).
- htb: the qdisc alone takes the rate off (until its class comes); `tc class add ...
  htb rate R` on htb's default class puts the rate on.
- `delete ... root` leaves the direction unshaped, as Linux does.

`add` on a direction that is already shaped is taken as a replace of its kind's stages:
the topology shaped the link, not a qdisc the user can see, so refusing with the
kernel's "File exists" would break every script that shapes a link the file shaped.

Where it departs from Linux, on purpose: tbf's and htb's burst (bytes let through at
line speed after an idle spell) is not emulated: netrig-link serializes every frame at
the rate; `show` prints the one qdisc that names what the direction runs (the AQM, else
netem, else the fifo), not htb's tree; its backlog is the queue's, without the frames on
the delay line. Anything netrig cannot express (netem's slot or cell overheads, a
correlation of duplicate or corrupt, tbf's peakrate, RED's adaptive mode, a rate as a
percentage of a device speed a veth does not have) is refused with a sentence naming the
word: `TcLineError`, whose `status` is tc's (1: tc itself could not read the line, 2: it
can read it but netrig's link cannot do it, as the kernel refusing a qdisc).

The parts: `tcwords` (tc's readers of one word, `TcLineError`, `Change`), `tcnetem`
(netem's words) and `tcqueues` (pie, codel, fq_codel, red, pfifo, bfifo, tbf, htb);
this module reads the line (`parse`), picks the kind's reader and applies the change
(`apply`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrig.link.spec import KEYS
from netrig.link.tcnetem import netem
from netrig.link.tcqueues import codel, fifo, htb_class, htb_qdisc, pie, red, tbf
from netrig.link.tcwords import (
    AQMS,
    KINDS,
    RATE,
    Change,
    TcLineError,
    _words,
    cannot,
    handle,
    matches,
)

__all__ = ["AQMS", "KINDS", "Applied", "Change", "Command", "Htb", "TcLineError", "apply", "matches",
           "parse", "qdisc_change", "verb_of"]


def rate_of(text: Mapping[str, Any]) -> int | None:
    """The rate a direction's keys give, in bit/s (for RED's bandwidth)."""
    return int(KEYS["rate"].parse(text["rate"])) if text.get("rate") else None


def qdisc_change(kind: str, words: Sequence[str], verb: str, current: Mapping[str, Any]) -> Change:
    """What `tc qdisc VERB ... KIND WORDS` does to a direction whose keys are `current`."""
    if kind == "netem":
        return netem(words)
    if kind == "pie":
        return pie(words, verb, current)
    if kind in ("codel", "fq_codel"):
        return codel(words, verb, current, kind)
    if kind == "red":
        return red(words, current, rate_of(current))
    if kind in ("pfifo", "bfifo"):
        return fifo(words, kind)
    if kind == "tbf":
        return tbf(words)
    if kind == "htb":
        return htb_qdisc(words)[0]
    raise cannot(f"qdisc {kind}", f"netrig-link's direction is a rate, a delay/loss stage and one queue "
                                  f"({', '.join(KINDS)} set them); it has no {kind}")


# Reading the command: `qdisc VERB ...` and `class VERB ...` (after tc's global options).

VERBS = ("add", "change", "replace", "link", "delete")


def verb_of(word: str) -> str | None:
    """The qdisc/class verb `word` abbreviates, in tc's order (`d` is delete), if any."""
    return next((v for v in VERBS if matches(word, v)), None)


@dataclass(frozen=True)
class Command:
    """One `tc qdisc|class VERB` line: its device, where it hangs (`root`, or `parent`
    as (major, minor)), its handle or classid, kind and the kind's own words."""

    object: str  # qdisc | class
    verb: str
    dev: str | None
    parent: str | tuple[int, int] | None
    handle: tuple[int, int] | None
    kind: str | None
    words: tuple[str, ...]


def parse(object: str, words: Sequence[str]) -> Command:
    """`add dev s0-eth2 root pie limit 1000` (tc's words after `qdisc` or `class`)."""
    if not words or verb_of(words[0]) is None:
        raise TcLineError(f"{object}: '{words[0] if words else ''}' is not add, change, replace or delete",
                          status=255)
    verb = verb_of(words[0])
    assert verb is not None
    dev = kind = None
    parent: str | tuple[int, int] | None = None
    hd = None
    rest: tuple[str, ...] = ()
    c = _words(words[1:])
    while c.more():
        w = c.take()
        if w == "dev":
            dev = c.value(w)
        elif w == ("classid" if object == "class" else "handle"):
            hd = handle(c.value(w), "class ID" if object == "class" else "qdisc handle")
        elif w == "root":
            parent = "root"
        elif w == "parent":
            parent = handle(c.value(w), "parent ID")
        elif w in ("ingress", "clsact"):
            parent = w
            break
        elif matches(w, "estimator") or matches(w, "stab") or matches(w, "ingress_block") or \
                matches(w, "egress_block"):
            raise cannot(w, "netrig's tc takes no rate estimators, size tables or blocks")
        else:
            kind = w
            rest = tuple(c.words[c.i:])
            break
    return Command(object, verb, dev, parent, hd, kind, rest)


# Applying a command to a direction.

@dataclass(frozen=True)
class Htb:
    """htb at a direction's root: its handle's major and its default class's minor."""

    major: int
    default: int


@dataclass(frozen=True)
class Applied:
    """A direction after a line: its keys, htb at its root (if any), the kind the line named."""

    text: dict[str, Any]
    htb: Htb | None
    kind: str | None


def apply(cmd: Command, current: Mapping[str, Any], htb: Htb | None) -> Applied:
    """What `cmd` leaves of a direction whose keys are `current` (and whose root is htb,
    if `htb`). Raises TcLineError naming what netrig cannot do."""
    if cmd.object == "class":
        return _apply_class(cmd, current, htb)
    if cmd.verb == "delete":
        if cmd.parent not in ("root", None) or (cmd.parent is None and cmd.handle is None):
            where = "parent {}:{:x}".format(*cmd.parent) if isinstance(cmd.parent, tuple) else "no root"
            raise cannot(f"qdisc delete {where}", "netrig-link's direction is one queue and its stages, "
                                                  "not a tree: delete it all with 'tc qdisc del dev "
                                                  f"{cmd.dev} root'")
        return Applied({}, None, cmd.kind)
    if cmd.parent is None:
        raise TcLineError(f"qdisc {cmd.verb}: give root or parent (tc's kernel call needs one)", status=2)
    if cmd.kind is None:
        raise TcLineError(f"qdisc {cmd.verb}: which qdisc? (e.g. netem, pie, tbf after root)", status=2)
    if cmd.kind == "htb":
        if cmd.parent != "root":
            raise cannot("htb under another qdisc", "netrig-link's direction has one rate stage: put htb "
                                                    "at the root")
        ch, default = htb_qdisc(cmd.words)
        major = cmd.handle[0] if cmd.handle else 0x8001
        return Applied(ch.applied(current), Htb(major, default), "htb")
    ch = qdisc_change(cmd.kind, cmd.words, cmd.verb, current)
    return Applied(ch.applied(current), htb if cmd.parent != "root" else None, cmd.kind)


def _apply_class(cmd: Command, current: Mapping[str, Any], htb: Htb | None) -> Applied:
    if cmd.verb != "delete" and cmd.kind != "htb":
        raise cannot(f"class of {cmd.kind or 'no kind'}", "netrig's tc takes htb's one rate class only")
    if htb is None:
        raise cannot(f"class {cmd.verb}", f"{cmd.dev} has no htb qdisc at its root: add one first "
                                          f"('tc qdisc add dev {cmd.dev} root handle 1: htb default 1')")
    cid = cmd.handle
    if cid is None or cid[0] != htb.major or cid[1] != htb.default or cid[1] == 0:
        shown = "no classid" if cid is None else f"class {cid[0]:x}:{cid[1]:x}"
        raise cannot(shown, f"htb's default class is {htb.major:x}:{htb.default:x}, and without filters "
                            "(which netrig does not emulate) only it carries traffic")
    if isinstance(cmd.parent, tuple) and cmd.parent != (htb.major, 0):
        raise cannot("parent {:x}:{:x}".format(*cmd.parent), f"netrig's tc takes one class, right under "
                                                             f"htb ({htb.major:x}:)")
    if cmd.verb == "delete":
        return Applied(Change("htb", clears=set(RATE)).applied(current), htb, "htb")
    return Applied(htb_class(cmd.words).applied(current), htb, "htb")
