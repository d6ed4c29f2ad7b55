"""Link backends: how a lab shapes its links, from a direction's numbers.

Owns: reading the link-spec contract (`spec`: schema.json, which Rust owns, and the
`Direction` each link direction resolves to, in SI units) and the two backends:
- `userspace` (the default): the netrig-link daemon, in the lab's `PREFIX--emu`
  namespace, forwards each shaped link between two veth pairs; it does everything
  (rate, trace, delay, jitter, loss, AQMs) on any kernel.
- `kernel`: tc qdiscs on the veth ends, laid out by `kernel.plan` (htb for the rate;
  netem, an AQM's qdisc or pfifo/bfifo as its leaf), their options written by one pure
  translator per qdisc in `tc`. A key no translator owns, or a value a kernel qdisc
  cannot express, is an error naming the link, the direction and the key; a qdisc
  this kernel lacks is an error from `netrig.lab.qdiscs`, which probes build's own
  lines. Never a silent fallback.
The other way round, `tcline` reads a `tc qdisc|class` line (as tc(8) does) into the
keys of a direction it changes (tc's words in `tcwords`, netem's in `tcnetem`, the
queue's and rate's qdiscs in `tcqueues`), and `tcshow` prints a direction as `tc -s qdisc show`
does (pure; `netrig.lab.tcshim` applies them in a running lab).

Does not own: the keys, units, ranges and defaults (Rust's schema), the topology
(`netrig.topo`), or running anything (`netrig.lab` makes namespaces and runs tc).
Unshaped links are plain veth pairs under either backend.
"""
