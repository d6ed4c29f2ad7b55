"""The running lab: what exists on this machine while a topology is up.

Owns building a planned topology into network namespaces, veth pairs, bridges and
link emulators (`build`), the `ip netns` and `tc` plumbing (`netns`, `qdiscs`), the
lab's state file under /run/netrig/labs and who may trust it (`state`), and the
`Network` facade that scripts and the runner use (`network`: start, stop, exec,
ping, iperf, live link changes), and tc's command line inside a lab (`tcshim`: a
`tc` first on a node's PATH that changes the links netrig-link carries), FRR on its
routers (`frr` runs the daemons; `frrconf`, pure, writes their configuration and what
they should route). `status` and `top` show a running lab (`top`: live, from
netrig-link's 100 Hz samples). `stitch` is a prototype of labs bigger than one
machine: two labs' nodes joined by a VXLAN link (docs/scaling.md).

Does not own the topology itself (`netrig.topo`: pure model, file loading and
planning, no system calls) or how a link direction is shaped (`netrig.link`).
"""
