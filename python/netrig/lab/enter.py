"""Entering a node of a running lab (`netrig exec`): the command line that runs a
command, or a shell, inside the node's namespace, and the environment it runs with.

- the node must be one of the lab's (an unknown name is told with the nearest ones);
- no command is the user's shell, whose prompt names the node: "h1 (lab pf)# ";
- netrig's own binaries (netrig-perf, netrig-link) run whatever the PATH (a venv
  that is not activated);
- vtysh on a router running FRR talks to that router's daemons (without PAM);
- tc's shim (netrig.lab.tcshim) is first on PATH, so tc on a link netrig-link
  carries changes it live.

Owns these rules; netrig.cli.lab replaces the process with the result.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from netrig import suggest
from netrig._bins import binary
from netrig.errors import NetrigError
from netrig.lab.state import LabState


@dataclass
class Entry:
    argv: list[str]  # `ip netns exec NS CMD...`
    env: dict[str, str]  # the variables to set for it (PATH, and a shell's prompt)


def entry(st: LabState, node: str, cmd: list[str], env: Mapping[str, str]) -> Entry:
    """How to run `cmd` (none: a shell) in `node` of lab `st`, given the caller's `env`."""
    from netrig.lab import frr, tcshim

    if node not in st.node_ns:
        raise NetrigError(f"lab '{st.prefix}' has no node '{node}'"
                          f"{suggest.unknown(node, st.node_ns, 'it has')}")
    cmd = list(cmd)
    out: dict[str, str] = {}
    if not cmd:  # an interactive shell whose prompt names the node: "h1 (lab pf)# "
        cmd = [env.get("SHELL", "/bin/sh")]
        out["PS1"] = f"{node} (lab {st.prefix})# "
        out["debian_chroot"] = f"{node} in lab {st.prefix}"  # Debian's bashrc shows it
        out["NETRIG_NODE"] = node
    if cmd[0] in ("netrig-perf", "netrig-link") and shutil.which(cmd[0], path=env.get("PATH")) is None:
        cmd[0] = str(binary(cmd[0]))
    if os.path.basename(cmd[0]) == frr.VTYSH:  # to this router's daemons, without PAM
        d = frr.router_dir(st.dir, node)
        if not d.is_dir():
            raise NetrigError(f"{node} runs no FRR in lab '{st.prefix}' (no {d}): vtysh has "
                              "no daemons to talk to there")
        cmd = [cmd[0], *frr.vtysh_args(d), *cmd[1:]]
    bindir = str(tcshim.install(st.dir / "bin").parent)
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir]
    out["PATH"] = os.pathsep.join([bindir, *rest])
    return Entry(["ip", "netns", "exec", st.node_ns[node], *cmd], out)
