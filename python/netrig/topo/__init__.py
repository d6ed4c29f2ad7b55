"""Topologies as data: pure, no system calls.

Owns the topology model and its checks (`model`: `Topology`, made of `problems`,
`shaping`, `protocols` and `links`, whose names `model` re-exports), reading topology
files with every error at its file and line (`load`), and the plan of addresses,
interfaces and routes (`plan`), and drawing a topology (`graph`: SVG/PNG with matplotlib, text for a terminal).

Does not own anything that runs: building, namespaces and the lab's state are
`netrig.lab`; link backends are `netrig.link`.
"""
