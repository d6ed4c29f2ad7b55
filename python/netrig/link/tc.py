"""One translator per qdisc: a link direction's numbers -> the options of one `tc` qdisc.

Each translator is pure (no process, no kernel): it reads the `Direction`
(`netrig.link.spec`, SI units), writes the options tc(8) takes, and raises
`KernelBackendError` naming the link, the direction and the key of anything the
kernel's qdisc cannot express as netrig-link runs it. `OWNS` says which keys and
discipline parameters each translator reads; `netrig.link.kernel` refuses any key no
translator owns, so a key added to the schema later is refused until one learns it.

Values are written as tc parses them exactly (iproute2 6.1, tc/q_*.c):
- Times in whole microseconds (`delay 1190us`): tc's get_time() multiplies a decimal
  by its unit and truncates, so `1.19ms` would become 1189 us. A time that is not a
  whole number of microseconds is refused. (The kernel then keeps netem's delay in
  64 ns ticks and PIE's tupdate in jiffies; those roundings are the kernel's own.)
- Rates in bit/s (`rate 30000000bit`); the kernel counts whole bytes per second, so a
  rate that is not a multiple of 8 bit/s is refused.
- Probabilities as the shortest percentage that reads back as the same double
  (`0.123456%`, never `%g`'s six digits); netem scales it to 2^32 - 1 itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from netrig.errors import NetrigError
from netrig.link.spec import DISCIPLINES, Direction


class KernelBackendError(NetrigError):
    pass


def refuse(at: str, key: str, why: str) -> KernelBackendError:
    """`link r1-r2 a_to_b: aqm.gentle: why; use backend: userspace`."""
    return KernelBackendError(f"{at}: {key}: {why}; use backend: userspace (netrig-link does it)")


def _shown(d: Direction, key: str) -> str:
    """The user's own text for key (`aqm.target` looks in the aqm mapping), for errors."""
    name, _, param = key.partition(".")
    v = d.text.get(name)
    if param:
        v = v.get(param) if isinstance(v, dict) else None
    return f"'{v}'" if v is not None else "this value"


# Units, written exactly.

def us(seconds: float, d: Direction, at: str, key: str, qdisc: str) -> str:
    ns = int(round(seconds * 1e9))  # the contract's nanoseconds (spec.Key.to_json)
    if ns % 1000:
        raise refuse(at, key, f"{_shown(d, key)} ({ns} ns) is not a whole number of microseconds, "
                              f"and the kernel's {qdisc} takes whole microseconds")
    return f"{ns // 1000}us"


def percent(p: float) -> str:
    """The shortest decimal percentage that tc reads back (strtod, then / 100) as p."""
    for digits in range(1, 18):
        s = f"{p * 100:.{digits}g}"
        if float(s) / 100 == p:
            break
    else:
        s = repr(p * 100)
    if "e" in s:  # tc's strtod reads 1e-05 too, but a reader of the line should not need to
        s = f"{float(s):.{max(0, 20 - len(s))}f}".rstrip("0").rstrip(".")
    return f"{s}%"


def bits(rate_bps: float, d: Direction, at: str) -> str:
    r = int(round(rate_bps))
    if r % 8:
        raise refuse(at, "rate", f"{_shown(d, 'rate')} is {r} bit/s, not a whole number of bytes per "
                                 "second, which is what the kernel's htb counts")
    return f"{r}bit"


def _packets(d: Direction, at: str, qdisc: str) -> int:
    packets, nbytes = d.limit
    if packets is None:
        raise refuse(at, "queue", f"{_shown(d, 'queue')} is in bytes; the kernel's {qdisc} limits "
                                  f"its queue in packets only")
    return packets


def _flag(on: bool, name: str) -> str:
    return name if on else f"no{name}"


# The translators. Each returns the words after `tc qdisc add ... KIND`.

def htb_class(d: Direction, at: str) -> list[str]:
    """htb's one class, at the rate; overhead is added to every packet's length as
    netrig-link's serializer adds it."""
    rate = bits(d.rate_bps, d, at)
    # A burst of at least one MTU frame and 1 ms of rate, as tc's own default does.
    burst = max(1600, int(round(d.rate_bps)) // 8 // 1000)
    words = ["rate", rate, "ceil", rate, "burst", str(burst), "cburst", str(burst)]
    if d.overhead_bytes:
        words += ["overhead", str(d.overhead_bytes)]
    return words


def netem(d: Direction, at: str) -> list[str]:
    """Delay, jitter, loss, duplicate, corrupt and reorder; as htb's leaf it is also the
    queue, so its limit (packets only: netem has no byte limit, and a bfifo grafted
    under netem would see packets only after their delay) is the direction's queue."""
    if d.aqm.name != "droptail":
        raise refuse(at, "aqm", f"the kernel cannot put {d.aqm.name} together with netem: netem, htb's "
                                "leaf, holds the queue itself")
    words = ["limit", str(_packets(d, at, "netem"))]
    if d.delay_s or d.jitter_s:
        words += ["delay", us(d.delay_s, d, at, "delay", "netem")]
        if d.jitter_s:
            words.append(us(d.jitter_s, d, at, "jitter", "netem"))
            if d.correlation:
                words.append(percent(d.correlation))
            if d.distribution not in (None, "uniform"):  # netem's jitter is uniform unless told
                words += ["distribution", d.distribution]
            if d.no_reorder:
                raise refuse(at, "no_reorder", "the kernel's netem reorders jittered packets by their "
                                               "send time and cannot keep their order")
    if d.gemodel:
        g = d.gemodel  # tc's order: p, r, 1-h (loss in the bad state), 1-k (in the good)
        words += ["loss", "gemodel", *(percent(g[k]) for k in ("p", "r", "loss_bad", "loss_good"))]
    elif d.loss:
        words += ["loss", "random", percent(d.loss)]
        if d.loss_correlation:
            words.append(percent(d.loss_correlation))
    if (d.gemodel or d.loss) and d.get("ecn"):
        words.append("ecn")  # loss marks ECN-capable packets instead (netrig-link does the same)
    if d.duplicate:
        words += ["duplicate", percent(d.duplicate)]
    if d.corrupt:
        words += ["corrupt", percent(d.corrupt)]
    if d.reorder:
        words += ["reorder", percent(d.reorder), "gap", str(d.reorder_gap)]
    return words


def pfifo(d: Direction, at: str) -> list[str]:
    return ["limit", str(_packets(d, at, "pfifo"))]


def bfifo(d: Direction, at: str) -> list[str]:
    return ["limit", str(d.limit[1])]


PIE_BURST_S = 0.150  # sch_pie's burst allowance, fixed (pie_vars_init: 150 ms)


def _sixteenths(d: Direction, at: str, name: str) -> str:
    v = d.aqm.get(name)
    k = v * 16
    if not (abs(k - round(k)) < 1e-9 and 1 <= round(k) <= 32):
        raise refuse(at, f"aqm.{name}", f"{v:g}: the kernel's pie takes {name} in steps of 1/16 from "
                                        "0.0625 to 2 (tc writes it as 1 .. 32)")
    return str(round(k))


def pie(d: Direction, at: str) -> list[str]:
    """Every parameter written, the schema's defaults included: the kernel then runs
    netrig-link's PIE, not its own defaults."""
    a = d.aqm
    burst = a.get("max_burst")
    if int(round(burst * 1e9)) != int(round(PIE_BURST_S * 1e9)):
        raise refuse(at, "aqm.max_burst", f"{_shown(d, 'aqm.max_burst')}: the kernel's pie has a fixed "
                                          "burst allowance of 150ms")
    return ["limit", str(_packets(d, at, "pie")),
            "target", us(a.get("target"), d, at, "aqm.target", "pie"),
            "tupdate", us(a.get("tupdate"), d, at, "aqm.tupdate", "pie"),
            "alpha", _sixteenths(d, at, "alpha"), "beta", _sixteenths(d, at, "beta"),
            _flag(a.get("ecn"), "ecn")]


def codel(d: Direction, at: str) -> list[str]:
    a = d.aqm
    return ["limit", str(_packets(d, at, "codel")),
            "target", us(a.get("target"), d, at, "aqm.target", "codel"),
            "interval", us(a.get("interval"), d, at, "aqm.interval", "codel"),
            _flag(a.get("ecn"), "ecn")]


FQ_CODEL_MIN_QUANTUM = 256  # sch_fq_codel raises a smaller quantum to 256


def fq_codel(d: Direction, at: str) -> list[str]:
    a = d.aqm
    if a.get("quantum") < FQ_CODEL_MIN_QUANTUM:
        raise refuse(at, "aqm.quantum", f"{a.get('quantum')}: the kernel's fq_codel takes a quantum of "
                                        f"{FQ_CODEL_MIN_QUANTUM} bytes or more")
    return ["limit", str(_packets(d, at, "fq_codel")), "flows", str(a.get("flows")),
            "quantum", str(a.get("quantum")),
            "target", us(a.get("target"), d, at, "aqm.target", "fq_codel"),
            "interval", us(a.get("interval"), d, at, "aqm.interval", "fq_codel"),
            _flag(a.get("ecn"), "ecn")]


# netrig-link's RED (the schema's): the typical packet of its idle decay, and its
# averaging weight wq; the kernel's EWMA weight is 2^-Wlog, and 2^-9 is nearest 0.002.
RED_AVPKT = DISCIPLINES["red"].constants["avpkt_bytes"]
RED_WLOG = round(-math.log2(DISCIPLINES["red"].constants["wq"]))


def _red_wlog(min_th: int, burst: int, avpkt: int) -> int:
    """tc_red_eval_ewma() (iproute2 tc/tc_red.c): the Wlog tc derives from burst."""
    a = burst + 1 - min_th / avpkt
    if a < 1:
        return -1
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    return -1


def red_burst(min_th: int) -> int | None:
    """The smallest burst (packets) from which tc derives Wlog 9, if any. tc-red(8)'s
    rule of thumb, (2 min + max) / (3 avpkt), gives Wlog 5 (a weight of 1/32, 16 times
    netrig-link's) for the default thresholds, so it is not used."""
    lo = min_th // RED_AVPKT
    for burst in range(max(1, lo), lo + 4096):
        w = _red_wlog(min_th, burst, RED_AVPKT)
        if w == RED_WLOG:
            return burst
        if w > RED_WLOG:
            return None
    return None


def red(d: Direction, at: str) -> list[str]:
    """Linux RED, as netrig-link's red.rs follows it: the average of the backlog in
    bytes, marked above max_th too when ecn is on (no harddrop)."""
    a = d.aqm
    if a.get("gentle"):
        raise refuse(at, "aqm.gentle", "the kernel's red has no gentle mode")
    packets, limit = d.limit
    if limit is None:
        raise refuse(at, "queue", f"{_shown(d, 'queue')} is in packets; the kernel's red limits its "
                                  "queue in bytes only")
    lo, hi, p = int(a.get("min_th")), int(a.get("max_th")), a.get("max_p")
    if not 0 < p < 1:
        raise refuse(at, "aqm.max_p", f"{p:g}: the kernel's red takes a probability above 0 and below 1 "
                                      "(it holds it in 32 bits)")
    burst = red_burst(lo)
    if burst is None:
        raise refuse(at, "aqm.min_th", f"{lo} bytes: tc finds no burst that gives the kernel's red the "
                                       "averaging weight 2^-9 (netrig-link's is 0.002)")
    words = ["limit", str(limit), "min", str(lo), "max", str(hi), "avpkt", str(RED_AVPKT),
             "burst", str(burst), "probability", repr(p)]
    if d.rate_bps:  # idle decay at the link's rate, as netrig-link's (none without a rate)
        words += ["bandwidth", bits(d.rate_bps, d, at)]
    if a.get("ecn"):
        words.append("ecn")
    return words


Translator = Callable[[Direction, str], list[str]]

# The discipline -> its qdisc's translator (droptail: bfifo or pfifo by the queue's unit).
AQM: dict[str, tuple[str, Translator]] = {
    "pie": ("pie", pie), "codel": ("codel", codel), "fq_codel": ("fq_codel", fq_codel), "red": ("red", red)}

# The keys of `Direction.values` and the discipline parameters each translator reads.
OWNS: dict[str, set[str]] = {
    "trace": {"trace", "trace_repeat"},  # refused: no qdisc replays a delivery trace
    "htb": {"rate", "overhead"},
    "netem": {"delay", "jitter", "distribution", "correlation", "no_reorder", "loss", "loss_correlation",
              "gemodel", "ecn", "duplicate", "corrupt", "reorder", "reorder_gap", "queue"},
    "fifo": {"queue"},
    "pie": {"queue", "aqm.target", "aqm.tupdate", "aqm.alpha", "aqm.beta", "aqm.max_burst", "aqm.ecn"},
    "codel": {"queue", "aqm.target", "aqm.interval", "aqm.ecn"},
    "fq_codel": {"queue", "aqm.target", "aqm.interval", "aqm.flows", "aqm.quantum", "aqm.ecn"},
    "red": {"queue", "rate", "aqm.min_th", "aqm.max_th", "aqm.max_p", "aqm.gentle", "aqm.ecn"},
}
