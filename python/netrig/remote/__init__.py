"""Real machines in a scenario, reached over SSH.

    hosts.py  the scenario's `hosts:`, `path:` and `clocks:` (pure: parse and check),
              and the topology that stands for what the user declared about the path
              (never built: theory and the report's drawing read it)
    ssh.py    the transport: the `ssh`/`scp` binaries (the user's ~/.ssh/config, agent,
              ProxyJump and known_hosts apply), one ControlMaster per host per run, and
              errors that say which host, which step and what to do

Does not own running a scenario's flows on those hosts (`netrig.exp.execute.remote`), nor
anything of the emulated lab (`netrig.lab`).
"""
