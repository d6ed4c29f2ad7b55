"""What the head of a cluster campaign accepts from a worker, checked before anything is
written: a worker is a machine of its own, and a head must not be made to run code or
write outside a run's directory by what one sends back.

- A run comes back as plain data, never a pickled object: {"files": {NAME: bytes},
  "worker": {...}} (or {"error": TEXT, ...}, {"stopped": True, ...}), which the head's
  Dask client decodes with msgpack only (DESERIALIZERS: a result serialized any other
  way is refused). `read` checks it: every NAME a plain relative name (no `..`, no
  absolute path, no empty, dot or control-character component, MAX_DEPTH deep at most;
  the head writes through no link, safefs), each file at most MAX_FILE_BYTES and the
  run at most MAX_RUN_BYTES in MAX_FILES files, and run.json parsed as JSON and checked
  against RUN_FIELDS: the run asked for (id, point, repetition, seed, parameters), a
  known status, each field of its type, every path it names a plain relative name.
- Dask's client unpickles a few things a worker sends whatever its deserializers say (a
  result's type, a task's exception and traceback, its warnings, messages the
  scheduler relays). `refusing_pickles` (an audit hook, armed on the head's client
  threads while a campaign is connected) lets those pickles name only builtin data
  types, Exception classes and tblib's traceback rebuilders (UNPICKLE_SAFE): any other
  global, the way every pickle that runs code starts, is refused.
"""

from __future__ import annotations

import builtins
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from netrig.errors import NetrigError
from netrig.exp.record.run import RECORD_SCHEMA

# A capture's files are 1 GB at most unless its `size:` says otherwise (capture/lab.py
# DEFAULT_SIZE) and dumpcap stops just past it; a run's other files are small.
MAX_FILE_BYTES = 1_100_000_000
MAX_RUN_BYTES = 2_000_000_000
MAX_FILES = 10_000
MAX_DEPTH = 6
MAX_NAME = 255  # bytes in one component (the kernel's NAME_MAX)
MAX_TEXT = 20_000  # characters of an error or of a worker's fact
DESERIALIZERS = ("msgpack", "error")  # the head's client: plain data, or an error text
STATUSES = ("ok", "failed", "interrupted")
WORKER_KEYS = ("name", "address", "hostname", "lab")  # kept of what a worker says of itself

NUMBER = (int, float)
# run.json as the runner writes it (exp/execute/runner.py _write_run, Tally.crashed): field, its
# types; REQUIRED are always there.
RUN_FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (int,), "run": (str,), "point": (int,), "rep": (int,), "seed": (int,), "params": (dict,),
    "status": (str,), "tolerance": NUMBER, "started": (str,), "seconds": NUMBER, "flows": (dict,), "monitors": (list,),
    "teardown_errors": (list,), "host": (dict,), "emulator": (dict,), "routing": (dict,),
    "events": (list,), "captures": (list,), "error": (str,), "emulator_died": (dict,)}
REQUIRED = ("run", "point", "rep", "seed", "params", "status", "flows")


class BadReply(NetrigError):
    """What a worker sent back, refused; `worker`: what of it could be read of the worker."""

    def __init__(self, why: str, worker: dict[str, Any] | None = None) -> None:
        super().__init__(why)
        self.worker = worker or {}


@dataclass
class Reply:
    worker: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    doc: dict[str, Any] | None = None  # run.json, checked
    error: str | None = None
    stopped: bool = False


def _text(v: Any, what: str) -> str:
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise BadReply(f"{what} is not a text of at most {MAX_TEXT} characters")
    return v


def read(got: Any, rid: str, point: int, rep: int, seed: int, params: dict[str, Any]) -> Reply:
    """What a worker sent back for run `rid`, checked (BadReply says what was refused)."""
    if not isinstance(got, dict) or not isinstance(got.get("worker"), dict):
        raise BadReply(f"it is not a run's reply ({type(got).__name__})")
    worker = {k: _text(got["worker"][k], f"its worker's {k}") for k in WORKER_KEYS if k in got["worker"]}
    extra = set(got) - {"worker", "files", "error", "stopped"}
    if extra:
        raise BadReply(f"it holds what a run's reply does not ({', '.join(sorted(map(str, extra)))})", worker)
    if got.get("stopped") is True:
        return Reply(worker, stopped=True)
    if "error" in got:
        try:
            return Reply(worker, error=_text(got["error"], "its error"))
        except BadReply as e:
            raise BadReply(str(e), worker) from None
    try:
        files = check_files(got.get("files"))
        doc = check_run(files["run.json"], rid, point, rep, seed, params)
    except BadReply as e:
        raise BadReply(str(e), worker) from None
    return Reply(worker, files=files, doc=doc)


def plain(name: Any) -> str:
    """`name` if it is a plain relative file name (components without `..`, `.`, empty
    parts or control characters); BadReply otherwise."""
    if not isinstance(name, str):
        raise BadReply(f"a file name that is not text ({type(name).__name__})")
    parts = name.split("/")
    shown = json.dumps(name[:200])
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise BadReply(f"file name {shown} is not a plain name inside the run's directory")
    if len(parts) > MAX_DEPTH or any(len(p.encode("utf-8", "surrogatepass")) > MAX_NAME for p in parts):
        raise BadReply(f"file name {shown} is deeper than {MAX_DEPTH} or has a part over {MAX_NAME} bytes")
    if not name.isprintable():
        raise BadReply(f"file name {shown} holds control characters")
    return name


def check_files(files: Any) -> dict[str, bytes]:
    if not isinstance(files, dict) or "run.json" not in files:
        raise BadReply("it holds no run.json")
    if len(files) > MAX_FILES:
        raise BadReply(f"{len(files)} files: over {MAX_FILES}")
    total = 0
    for name, data in files.items():
        plain(name)
        if not isinstance(data, bytes):
            raise BadReply(f"{name}: its content is not bytes ({type(data).__name__})")
        if len(data) > MAX_FILE_BYTES:
            raise BadReply(f"{name}: {len(data)} bytes, over {MAX_FILE_BYTES} (MAX_FILE_BYTES)")
        total += len(data)
    if total > MAX_RUN_BYTES:
        raise BadReply(f"its files hold {total} bytes, over {MAX_RUN_BYTES} (MAX_RUN_BYTES)")
    dirs = {str(p) for name in files for p in PurePosixPath(name).parents if str(p) != "."}
    if clash := sorted(dirs & set(files)):
        raise BadReply(f"{clash[0]} is both a file and a directory")
    return files


def check_run(raw: bytes, rid: str, point: int, rep: int, seed: int, params: dict[str, Any]) -> dict[str, Any]:
    """run.json: JSON, of RUN_FIELDS' shape, for the run asked for."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BadReply(f"run.json is not JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise BadReply("run.json is not a JSON object")
    unknown = sorted(set(doc) - set(RUN_FIELDS))
    if unknown:
        raise BadReply(f"run.json has fields a run's has not: {', '.join(unknown[:5])}")
    for k in REQUIRED:
        if k not in doc:
            raise BadReply(f"run.json lacks '{k}'")
    for k, v in doc.items():
        if type(v) not in RUN_FIELDS[k]:
            raise BadReply(f"run.json's '{k}' is a {type(v).__name__}, not a "
                           f"{' or '.join(t.__name__ for t in RUN_FIELDS[k])}")
    if doc.get("schema", RECORD_SCHEMA) != RECORD_SCHEMA:
        raise BadReply(f"run.json's schema is {doc['schema']}, the head's {RECORD_SCHEMA}")
    asked = {"run": rid, "point": point, "rep": rep, "seed": seed}
    for k, v in asked.items():
        if doc[k] != v:
            raise BadReply(f"run.json is of another run ({k} {doc[k]!r}, asked {v!r})")
    if doc["params"] != json.loads(json.dumps(params, default=str)):
        raise BadReply("run.json's params are not the point's")
    if doc["status"] not in STATUSES:
        raise BadReply(f"run.json's status {doc['status']!r} is none of {', '.join(STATUSES)}")
    for name, f in doc["flows"].items():
        if not isinstance(f, dict) or not isinstance(f.get("summary", {}), dict) \
                or not isinstance(f.get("kind", ""), str):
            raise BadReply(f"run.json's flow {json.dumps(str(name)[:100])} is not a flow's entry")
        if isinstance(f.get("capture"), dict) and "stevens" in f["capture"]:
            plain(f["capture"]["stevens"])
    for c in doc.get("captures", []):
        if not isinstance(c, dict) or not isinstance(c.get("files", []), list):
            raise BadReply("run.json's captures are not captures' entries")
        for name in [*c.get("files", []), *([c["analysis"]] if "analysis" in c else [])]:
            plain(name)
    for k in ("monitors", "teardown_errors"):
        if not all(isinstance(x, str) for x in doc.get(k, [])):
            raise BadReply(f"run.json's '{k}' is not a list of texts")
    return doc


FACTS: dict[str, tuple[type, ...]] = {"netrig": (str,), "hostname": (str,), "kernel": (str,), "cpu": (str,),
                                      "cpus": (int,), "root": (bool,), "missing": (str,)}


def check_facts(f: Any) -> dict[str, Any]:
    """What a worker says of itself (exp/execute/worker.py facts), checked: FACTS' fields, of
    their types, texts bounded."""
    if not isinstance(f, dict) or set(f) != set(FACTS):
        raise BadReply(f"not a worker's facts (fields: {', '.join(sorted(map(str, f))) if isinstance(f, dict) else type(f).__name__})")
    for k, v in f.items():
        if type(v) not in FACTS[k] or (isinstance(v, str) and len(v) > MAX_TEXT):
            raise BadReply(f"its '{k}' is not a {FACTS[k][0].__name__}")
    return dict(f)


# --- pickles on the head ----------------------------------------------------------------

UNPICKLE_SAFE = frozenset(
    {("builtins", n) for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, Exception)}
    | {("builtins", n) for n in ("bytes", "bytearray", "str", "int", "float", "complex", "bool", "dict",
                                 "list", "tuple", "set", "frozenset")}
    | {("distributed.scheduler", "KilledWorker"),
       # a task's exception and traceback, as Dask sends them (tblib): the exception's class
       # (from this set) made with its attributes; a traceback of plain frames
       ("tblib.pickling_support", "unpickle_exception"),
       ("tblib.pickling_support", "unpickle_exception_with_attrs"),
       ("tblib.pickling_support", "unpickle_traceback"),
       ("tblib", "Frame"), ("tblib", "Code"), ("tblib", "Traceback")})


class PickleRefused(NetrigError, TypeError):
    """(A TypeError too: Dask's client treats one as data it could not decode.)"""


_lock = threading.Lock()
_armed: dict[int, int] = {}  # thread id: how many campaigns armed it
_hooked = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "pickle.find_class" and _armed and threading.get_ident() in _armed:
        module, name = str(args[0]), str(args[1])
        if (module, name) not in UNPICKLE_SAFE:
            raise PickleRefused(f"the cluster head unpickles nothing that names {module}.{name}: "
                                "a worker's reply is plain data")


@contextmanager
def refusing_pickles(threads: list[int]) -> Iterator[None]:
    """While inside: an unpickling on any of `threads` (thread ids) that names a global
    outside UNPICKLE_SAFE raises PickleRefused."""
    global _hooked
    with _lock:
        if not _hooked:
            sys.addaudithook(_hook)  # (an audit hook stays for the process: it checks _armed)
            _hooked = True
        for t in threads:
            _armed[t] = _armed.get(t, 0) + 1
    try:
        yield
    finally:
        with _lock:
            for t in threads:
                _armed[t] -= 1
                if not _armed[t]:
                    del _armed[t]

