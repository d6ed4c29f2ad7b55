"""Experiments: scenario files, running them (sweeps, repetitions), results and reports.

    scenario.py  the file format: load, check (FILE:LINE: key: message), sweep points
    flows.py     one flow of a run: the command it is, and what its output means
    web.py       a web flow's client (curl) and what each fetch measured;
    webserver.py its server (nginx); webtools.py the programs both need
    expect.py    what theory expects of each flow (via `netrig.theory`)
    verdict.py   measured against theory: the one ratio and verdict, plain decimals
    why.py       why a row is far from theory: small rules over a run's evidence
    results.py   the results directory: atomic writes, host facts, the tidy CSV
    runner.py    runs every point and repetition, with progress; resumes; tears down
    remote.py    one run on real hosts over SSH (hosts:): the runner's run_one hands it
                 over; remote_report.py is its section of the report
    cluster.py   a campaign's runs on a Dask cluster (the head; `netrig cluster`);
                 worker.py a worker's side; cluster_tls.py the cluster's CA and
                 certificates; cluster_reply.py what the head accepts from a worker
    figures.py   matplotlib figures from a results directory
    report.py    report.html / report.md from a results directory; `netrig compare`

Does not own building networks (`netrig.lab`, `netrig.topo`) or the formulas
(`netrig.theory`).
"""
