"""Experiments: scenario files, running them (sweeps, repetitions, here, on real hosts or
on a cluster), their records, and the results, figures and reports read from them.

One package a layer, lowest first (python/LAYERS declares the order, and
scripts/import_cycles checks it):

    spec/       the scenario file, sweeps and --set (pure: nothing of this machine)
    preflight/  what this machine must have to run one (asked by `netrig run` only)
    kinds/      each flow kind and the tools that make tcp and udp flows, in one table
    grade/      what theory expects of each flow; the one ratio and verdict
    record/     the results directory's files and each run's record (run.json)
    analysis/   a results directory read back: rows, statistics, why, series, words
    execute/    campaigns and their executors (a lab here, real hosts, a cluster)
    render/     headline, report, figures, results.csv, compare, plot
    pipeline.py run, then report

Does not own building networks (`netrig.lab`, `netrig.topo`) or the formulas
(`netrig.theory`).
"""
