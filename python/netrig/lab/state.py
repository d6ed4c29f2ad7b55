"""A lab's state file: everything a lab creates is named here before it is created.

`/run/netrig/labs/PREFIX/state.json` (atomic writes) lists the lab's namespaces and
processes (FRR's daemons by PID and start time, so a reused PID is never signalled).
`netrig down` removes exactly those; `netrig clean` removes the labs whose builder died
mid-build or whose link emulator died. Nothing else is ever touched. It holds PIDs and
paths, so it is root's alone: the file is 0600, the directories below NETRIG_RUN_DIR
0700, and it is written through no symbolic link (netrig.safefs). What a daemon's own
user must reach (FRR's routers' directories, nginx's objects) is beside it, under
RUN/frr/PREFIX and RUN/www/PREFIX (`daemon_dir`; RUN itself is searchable, 0711).

A lab built from a file records the file's absolute path and the sha256 of its bytes as
built: a later command that needs the topology (`link set`, `pingall`) re-reads it by
that path and refuses it if the bytes differ (`netrig.lab.build.topology_of`), so it
never acts on another file of the same name or on an edited one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from netrig import safefs
from netrig.errors import NetrigError
from netrig.prefixes import PREFIX_RE

LABS_DIR = Path(os.environ.get("NETRIG_RUN_DIR", "/run/netrig")) / "labs"
# 2: topology_sha256, topology_text, link_changes; 3: frr (an older file reads as 3 without
# them); egress, controls and tc_htb are read as empty from a file without them
SCHEMA = 3
READS = (1, 2, SCHEMA)


class LabError(NetrigError):
    pass


def check_prefix(prefix: str) -> str:
    if not PREFIX_RE.fullmatch(prefix):
        raise LabError(f"lab prefix '{prefix}': use 1-15 lowercase letters, digits or _ "
                       "(it starts every namespace the lab creates)")
    return prefix


@dataclass
class LabState:
    prefix: str
    topology: str  # the file it came from (absolute), or "<python>"
    namespaces: list[str] = field(default_factory=list)
    node_ns: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)  # role -> pid (netrig-link)
    status: str = "building"  # building | up
    owner_pid: int = 0  # the process building it (0 once it is up and left running)
    backend: str = "userspace"
    control: str | None = None
    created: float = field(default_factory=time.time)
    plan: dict = field(default_factory=dict)  # nodes' addresses and links, for status
    topology_sha256: str = ""  # of the file's bytes as built ("" if built from no file)
    topology_text: str = ""  # those bytes, to say what changed when the file no longer matches
    link_changes: dict[str, dict] = field(default_factory=dict)  # link -> its keys as last set live
    # FRR's daemons: router -> daemon -> [pid, start time (/proc/PID/stat field 22)];
    # a router whose routing was stopped (Network.stop_routing) has none.
    frr: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # The link direction each device's egress feeds: namespace -> device -> [link,
    # "a_to_b"|"b_to_a"] (every link's ends; tc's shim changes those netrig-link carries).
    egress: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # link -> the control socket of the netrig-link carrying it, when not `control`
    # (a link added while the lab runs).
    controls: dict[str, str] = field(default_factory=dict)
    # htb at a carried direction's root, put there by tc's shim: link -> direction ->
    # [major of its handle, minor of its default class] (netrig.link.tcline.Htb).
    tc_htb: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    schema: int = SCHEMA

    @property
    def dir(self) -> Path:
        return LABS_DIR / self.prefix

    def save(self) -> None:
        # The fields as they are (all JSON's types): asdict's deep copy and an indent cost
        # a growing lab (Mininet's API saves as it adds) most of its build time.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        safefs.write(LABS_DIR.parent, f"{LABS_DIR.name}/{check_prefix(self.prefix)}/state.json",
                     json.dumps(data, separators=(",", ":")) + "\n", safefs.PRIVATE)

    @classmethod
    def load(cls, prefix: str) -> LabState:
        path = LABS_DIR / check_prefix(prefix) / "state.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise LabError(f"no lab '{prefix}' is up (no {path})") from None
        except json.JSONDecodeError as e:
            raise LabError(f"{path}: not a state file ({e})") from None
        if data.get("schema") not in READS:
            raise LabError(f"{path}: state schema {data.get('schema')}, this netrig reads {SCHEMA}")
        data.pop("schema", None)
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            # Another netrig wrote it (same schema, newer fields): say so, never a traceback.
            raise LabError(f"{path}: a state file with keys this netrig does not know "
                           f"({', '.join(unknown)}): written by another netrig version")
        return cls(**data, schema=SCHEMA)

    def remove(self) -> None:
        for f in ("state.json", "state.json.tmp"):  # .tmp: the fixed temporary name of older netrig
            safefs.unlink(LABS_DIR.parent, f"{LABS_DIR.name}/{self.prefix}/{f}", safefs.PRIVATE)


def daemon_dir(lab_dir: Path, tree: str) -> Path:
    """RUN/TREE/PREFIX: the files of a lab that a daemon's own user must reach (`frr`:
    FRR's routers; `www`: nginx's objects), beside the lab's root-only directory
    RUN/labs/PREFIX (netrig.safefs.shared_dir makes them)."""
    return lab_dir.parent.parent / tree / lab_dir.name


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_topology(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """A topology file read once: its absolute path, its text and the sha256 of its bytes
    (what a lab built from it records)."""
    from netrig.topo.load import read

    text = read(path)
    return os.path.abspath(path), text, sha256(text.encode("utf-8"))


def labs() -> list[str]:
    if not LABS_DIR.is_dir():
        return []
    return sorted(d.name for d in LABS_DIR.iterdir() if (d / "state.json").exists())


def alive(pid: int, name: str | None = None) -> bool:
    """Is pid running (and, if name is given, running that program)?"""
    if pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return name is None or any(Path(a.decode(errors="replace")).name == name for a in cmdline.split(b"\0")[:3])
