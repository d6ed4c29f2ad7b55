"""Link backends: how a lab shapes its links.

- `userspace` (the default): the netrig-link daemon, in the lab's `PREFIX--emu`
  namespace, forwards each shaped link between two veth pairs; it does everything
  (rate, trace, delay, jitter, loss, AQMs) on any kernel.
- `kernel`: tc qdiscs on the veth ends (htb/tbf rate and pfifo/bfifo queue here; netem
  and the AQM qdiscs where the kernel has them). What the kernel cannot do is an error
  naming the missing qdisc, never a silent fallback.

Unshaped links are plain veth pairs under either backend.
"""
