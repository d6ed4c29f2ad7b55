"""What the cluster head accepts from a worker, without a network: a run's reply checked
before anything is written (names, sizes, run.json's shape and run), what a worker says
of itself, and no pickle a worker sends running code on the head, by each way Dask's
client would unpickle one (a result, a result's type, a task's exception, a message the
scheduler relays as it came)."""

from __future__ import annotations

import json
import os
import pickle
import threading
from pathlib import Path

import pytest
from netrig.exp.execute import cluster_reply as reply

RID, POINT, REP, SEED, PARAMS = "p001-r02", 1, 2, 42, {"links.a-b.rate": "10Mbit"}


def run_doc(**change) -> dict:
    doc = {"schema": 2, "run": RID, "point": POINT, "rep": REP, "seed": SEED, "params": PARAMS,
           "status": "ok", "started": "2026-11-26T10:00:00+0000", "seconds": 2.5,
           "flows": {"bulk": {"kind": "tcp", "from": "h1", "to": "h2", "summary": {"throughput_bps": 9e6},
                              "capture": {"stevens": "capture/bulk-stevens.png"}}},
           "monitors": [], "teardown_errors": [], "host": {"hostname": "w"},
           "captures": [{"monitor": 0, "files": ["capture/0-s0.pcapng"], "analysis": "capture/0-s0.tcp.json"}]}
    doc.update(change)
    return doc


def got(files: dict | None = None, **doc_change) -> dict:
    return {"worker": {"name": "wa", "address": "tls://10.0.0.2:1", "hostname": "wa-host", "lab": "nx1",
                       "cpu": "x", "cpus": 2},
            "files": {"run.json": json.dumps(run_doc(**doc_change)).encode(), "flows/bulk.json": b"{}",
                      **(files or {})}}


def read(g: dict) -> reply.Reply:
    return reply.read(g, RID, POINT, REP, SEED, PARAMS)


def test_a_good_reply_is_read_and_only_the_workers_plain_facts_kept():
    r = read(got())
    assert r.doc is not None and r.doc["flows"]["bulk"]["kind"] == "tcp"
    assert r.worker == {"name": "wa", "address": "tls://10.0.0.2:1", "hostname": "wa-host", "lab": "nx1"}
    assert sorted(r.files) == ["flows/bulk.json", "run.json"]
    assert read({"worker": {"name": "wa"}, "stopped": True}).stopped
    assert read({"worker": {"name": "wa"}, "error": "no netrig-link"}).error == "no netrig-link"


@pytest.mark.parametrize("name,said", [
    ("../../etc/cron.d/x", "is not a plain name inside the run's directory"),
    ("/etc/passwd", "is not a plain name"),
    ("flows//x", "is not a plain name"),
    ("./run.json", "is not a plain name"),
    ("a/b/c/d/e/f/g", "is deeper than 6"),
    ("x" * 256, "has a part over 255 bytes"),
    ("bad\nname", "holds control characters"),
])
def test_a_file_name_that_is_not_plain_is_refused(name, said):
    with pytest.raises(reply.BadReply, match=said) as e:
        read(got({name: b"x"}))
    assert e.value.worker["name"] == "wa"  # (said in the failed run's record)


def test_sizes_and_counts_are_bounded(monkeypatch):
    monkeypatch.setattr(reply, "MAX_FILE_BYTES", 1000)
    with pytest.raises(reply.BadReply, match=r"big.bin: 1001 bytes, over 1000 \(MAX_FILE_BYTES\)"):
        read(got({"big.bin": b"x" * 1001}))
    monkeypatch.setattr(reply, "MAX_RUN_BYTES", 1500)
    with pytest.raises(reply.BadReply, match=r"over 1500 \(MAX_RUN_BYTES\)"):
        read(got({"a": b"x" * 900, "b": b"x" * 900}))
    monkeypatch.setattr(reply, "MAX_FILES", 3)
    with pytest.raises(reply.BadReply, match="4 files: over 3"):
        read(got({"a": b"", "b": b""}))
    with pytest.raises(reply.BadReply, match="its content is not bytes"):
        read(got({"a": "text"}))
    with pytest.raises(reply.BadReply, match="flows is both a file and a directory"):
        read(got({"flows": b""}))


@pytest.mark.parametrize("change,said", [
    ({"run": "p000-r00"}, r"run.json is of another run \(run 'p000-r00', asked 'p001-r02'\)"),
    ({"seed": 7}, r"another run \(seed 7"),
    ({"params": {}}, "run.json's params are not the point's"),
    ({"status": "great"}, "run.json's status 'great' is none of ok, failed, interrupted"),
    ({"worker": {"name": "forged"}}, "run.json has fields a run's has not: worker"),
    ({"flows": []}, "run.json's 'flows' is a list, not a dict"),
    ({"seed": True}, "run.json's 'seed' is a bool, not a int"),
    ({"schema": 99}, "run.json's schema is 99, the head's 2"),
    ({"flows": {"bulk": {"kind": "tcp", "capture": {"stevens": "../../../../etc/shadow"}}}},
     "file name \"../../../../etc/shadow\" is not a plain name"),
    ({"captures": [{"files": ["/etc/shadow"]}]}, "file name \"/etc/shadow\" is not a plain name"),
    ({"monitors": [1]}, "run.json's 'monitors' is not a list of texts"),
])
def test_run_json_is_checked_against_its_shape_and_the_run_asked_for(change, said):
    with pytest.raises(reply.BadReply, match=said):
        read(got(**change))


def test_run_json_that_is_not_json_or_is_missing_is_refused():
    g = got()
    g["files"]["run.json"] = b"\x80not json"
    with pytest.raises(reply.BadReply, match="run.json is not JSON"):
        read(g)
    g["files"]["run.json"] = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(reply.BadReply, match="run.json is not JSON"):
        read(g)
    del g["files"]["run.json"]
    with pytest.raises(reply.BadReply, match="it holds no run.json"):
        read(g)
    with pytest.raises(reply.BadReply, match="it is not a run's reply"):
        read(["files"])  # type: ignore[arg-type]
    with pytest.raises(reply.BadReply, match="holds what a run's reply does not"):
        read({**got(), "eval": "x"})


def test_what_a_worker_says_of_itself_is_checked():
    good = {"netrig": "0.1.0", "hostname": "w", "kernel": "6.1", "cpu": "x", "cpus": 2, "root": True,
            "missing": ""}
    assert reply.check_facts(good) == good
    for bad in ({**good, "cpus": "2"}, {**good, "root": 1}, {**good, "more": 1}, "facts", {**good, "cpu": "x" * 30_000}):
        with pytest.raises(reply.BadReply):
            reply.check_facts(bad)


# --- pickles ---------------------------------------------------------------------------


class Evil:
    """Unpickled, it creates MARK (code that runs where it is unpickled)."""

    mark = ""

    def __reduce__(self):
        return (exec, (f"open({self.mark!r}, 'w').close()",))


@pytest.fixture
def evil(tmp_path) -> tuple[bytes, Path]:
    mark = tmp_path / "ran"
    e = Evil()
    e.mark = str(mark)
    return pickle.dumps(e), mark


def armed():
    return reply.refusing_pickles([threading.get_ident()])


def test_each_way_dasks_client_unpickles_what_a_worker_sends_runs_no_code(evil):
    import distributed.client
    from distributed.core import clean_exception
    from distributed.protocol import dumps, loads
    from distributed.protocol.serialize import Pickled, deserialize, serialize

    data, mark = evil
    relayed = dumps({"op": "event", "topic": "netrig-runs", "event": Pickled({"pickled-obj": data}, [])})
    with armed():
        with pytest.raises(TypeError, match="only able to deserialize data with"):  # a result
            deserialize(*serialize(Evil()), deserializers=list(reply.DESERIALIZERS))
        with pytest.raises(reply.PickleRefused, match="names builtins.exec"):  # a result's type
            distributed.client.loads(data)
        exc, _ = clean_exception(data)[1:]  # a task's exception: left as its bytes
        assert type(exc) is Exception and exc.args == (data,)
        with pytest.raises(reply.PickleRefused):  # a message relayed as it came
            loads(relayed)
    assert not mark.exists()
    loads(relayed)  # (the same, unarmed: the way is a real one)
    assert mark.exists()


def test_only_the_armed_threads_refuse_and_exceptions_still_come_back(evil):
    import collections

    from distributed import KilledWorker
    from distributed.protocol import pickle as dpickle

    data, mark = evil
    ordered = pickle.dumps(collections.OrderedDict(a=1))
    with armed():
        with pytest.raises(reply.PickleRefused, match="collections.OrderedDict"):
            pickle.loads(ordered)
        got = {}
        t = threading.Thread(target=lambda: got.update(x=pickle.loads(ordered)))
        t.start()
        t.join()
        assert got["x"] == {"a": 1}  # another thread (a worker's, in one process) is not the head's
        assert dpickle.loads(dpickle.dumps(ValueError("boom"))).args == ("boom",)
        assert isinstance(dpickle.loads(dpickle.dumps(KilledWorker("k", "w", 3))), KilledWorker)
        assert dpickle.loads(dpickle.dumps({"b": b"x", "t": (1, 2.5)})) == {"b": b"x", "t": (1, 2.5)}
    assert pickle.loads(ordered) == {"a": 1}  # disarmed
    assert not mark.exists() and os.path.exists(mark.parent)
