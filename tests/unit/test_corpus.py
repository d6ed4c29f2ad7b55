"""The real-world corpus: captures no one here made (tcpdump's, Wireshark's, nDPI's and
other tools' test traces, listed in tests/corpus/MANIFEST.toml), each analysed by
netrig-analyze and by tshark 4.0 and compared field by field: every `tcp.analysis.*`
flag's frame set and every ack_rtt sample.

A capture may differ from tshark only on the frames its manifest entry lists under
`known`, each with the reason tshark's answer cannot or should not be reproduced there;
a listed difference that goes away fails the test too, so the list stays true.

The captures are fetched before the tests (`python3 scripts/corpus fetch`, which CI
runs); a missing one is skipped with that sentence, or fails where NETRIG_CORPUS_REQUIRED
is set (CI sets it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import scriptmod
from netrig import binary
from tsharkdiff import TSHARK, differences, frame_differences

corpus = scriptmod.load("scripts/corpus", "netrig_corpus_script")
SOURCES, CAPTURES = corpus.load()
DIR = corpus.corpus_dir()

# What issue 28 asks the corpus (or test_link_types' re-wrapped capture) to carry, by
# the names the manifest's `carries` uses.
REQUIRED_LINKS = {"ethernet", "raw-ip", "sll", "sll2", "null", "ppp", "ieee802.11", "radiotap"}
REQUIRED_ENCAPS = {"vlan", "pppoe", "mpls", "gre", "ipip", "ip6in4", "gtp-u", "vxlan"}


def _present(c: dict) -> Path:
    st = corpus.state(DIR, c)
    if st != "ok":
        msg = (f"corpus capture {c['name']} is {st} in {DIR}: run `python3 scripts/corpus fetch` "
               "(it downloads the sources the manifest names)")
        if os.environ.get("NETRIG_CORPUS_REQUIRED"):
            pytest.fail(msg)
        pytest.skip(msg)
    return DIR / c["name"]


def _analyze(p: Path) -> dict:
    r = subprocess.run([str(binary("netrig-analyze")), "tcp", str(p), "--frames"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"netrig-analyze refused {p.name}: {r.stderr}"
    return json.loads(r.stdout)


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
@pytest.mark.parametrize("c", CAPTURES, ids=[c["name"] for c in CAPTURES])
def test_a_real_capture_agrees_with_tshark(c: dict) -> None:
    p = _present(c)
    doc = _analyze(p)
    diff = frame_differences(p, doc)
    known = {k["field"]: set(k["frames"]) for k in c.get("known", [])}
    undecoded = known.pop("segments", set())
    if diff != known:
        unexplained = {f: sorted(v) for f, v in diff.items() if known.get(f) != v}
        gone = {f: sorted(v) for f, v in known.items() if diff.get(f) != v}
        pytest.fail(f"{c['name']} ({c['exercises']}): differences not in the manifest {unexplained}; "
                    f"manifest entries that no longer hold {gone}\n" + "\n".join(differences(p, doc)))
    assert doc["file"]["tcp_packets"] == c["tcp_frames"] - len(undecoded), (
        f"{c['name']}: netrig-analyze found TCP in {doc['file']['tcp_packets']} frames, tshark in "
        f"{c['tcp_frames']} (frames with a tcp.stream), of which the manifest says netrig-analyze "
        f"does not decode {len(undecoded)}")


def test_the_manifest_is_whole_and_covers_every_link_type_and_tunnel_asked_for() -> None:
    assert len(CAPTURES) >= 40
    from test_link_types import WRAPS

    carried = set().union(*(set(c.get("carries", [])) for c in CAPTURES))
    # What the corpus lacks, test_link_types carries: a corpus capture re-wrapped.
    rewrapped = {"ethernet", "vlan", "mpls", "pppoe", "raw-ip", "sll", "sll2", "null", "ppp", "ieee802.11",
                 "radiotap", "ppi", "gre", "ipip", "vxlan", "gtp-u", "chdlc", "loop"}
    assert {n.split("-")[0] for n in WRAPS} >= {"raw", "sll", "sll2", "null", "loop", "ppp", "ieee802.11",
                                                  "radiotap", "ppi", "gre", "ipip", "vxlan", "gtp"}
    carried |= rewrapped
    assert REQUIRED_LINKS - carried == set(), "link types neither the corpus nor test_link_types carries"
    assert REQUIRED_ENCAPS - carried == set(), "encapsulations neither the corpus nor test_link_types carries"
    for c in CAPTURES:
        assert c["tcp_frames"] > 0, c["name"]
        assert SOURCES[c["source"]]["licence"], c["source"]
        for k in c.get("known", []):
            assert k["why"] and k["frames"], f"{c['name']}: a known difference needs its frames and why"


def test_fetch_refuses_an_archive_member_that_is_a_link_or_out_of_the_manifest(tmp_path: Path) -> None:
    import io
    import tarfile

    data = b"\xd4\xc3\xb2\xa1" + b"\0" * 20
    good = {"name": "x.pcap", "source": "s", "path": "pkg/tests/x.pcap", "sha256": corpus.sha256(data),
            "exercises": "-"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        link = tarfile.TarInfo("pkg/tests/x.pcap")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
        evil = tarfile.TarInfo("../../escape.pcap")
        evil.size = len(data)
        tar.addfile(evil, io.BytesIO(data))
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(buf.getvalue())
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(corpus.CorpusError, match="not a regular file"):
        corpus.extract(archive, out, [good])
    assert list(out.iterdir()) == [] and not (tmp_path / "escape.pcap").exists()
    # A member with the right name but other bytes is refused by its SHA-256.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        m = tarfile.TarInfo("pkg/tests/x.pcap")
        m.size = 4
        tar.addfile(m, io.BytesIO(b"evil"))
    archive.write_bytes(buf.getvalue())
    with pytest.raises(corpus.CorpusError, match="SHA-256"):
        corpus.extract(archive, out, [good])
    # A planted link where the capture goes is replaced, not followed.
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    (out / "x.pcap").symlink_to(target)
    assert corpus.state(out, good) == "wrong"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        m = tarfile.TarInfo("pkg/tests/x.pcap")
        m.size = len(data)
        tar.addfile(m, io.BytesIO(data))
    archive.write_bytes(buf.getvalue())
    corpus.extract(archive, out, [good])
    assert target.read_bytes() == b"keep" and corpus.state(out, good) == "ok"
