"""FRR's configuration as netrig writes it from a plan (a ring of OSPF routers, and two
ASes joined by eBGP with iBGP over OSPF inside one), what each router should route once
converged, and the refusal to build a routed lab without FRR. Pure: nothing runs."""

import ipaddress

import pytest
from netrig.lab import frr
from netrig.lab.state import LabError
from netrig.topo.load import loads
from netrig.topo.model import Topology
from netrig.topo.plan import make_plan
from netrig.topo.protocols import spf_throttle_ms

RING = """
name: ring
routing: {ospf: {hello: 1s, dead: 4s, spf_delay: 10ms, lsa_interval: 0s}}
nodes:
  h1: host
  h2: host
  s1: switch
  r1: {kind: router, ospf: true}
  r2: {kind: router, ospf: true}
  r3: {kind: router, ospf: {area: 0}, frr: {ospfd: " max-metric router-lsa on-startup 5"}}
  r4: {kind: router, ospf: true}
links:
  - {a: h1, b: r1, rate: 100Mbit}
  - {a: r1, b: r2, rate: 10Mbit, delay: 5ms}
  - {a: r2, b: r3, rate: 30Mbit, b_to_a: {rate: 1Gbit}}
  - [r3, s1]
  - [s1, r4]
  - {a: r4, b: r1, cost: 7}
  - [h2, r3]
"""

TWO_AS = """
name: wan
routing: {bgp: {keepalive: 1s, hold: 3s, connect_retry: 2s, advertisement_interval: 0s}}
nodes:
  h1: host
  h2: host
  a1: {kind: router, bgp: 65001, ospf: true}
  a2: {kind: router, bgp: 65001, ospf: true}
  b1: {kind: router, bgp: {as: 65002}, frr: {bgpd: "! hello from the file", staticd: "ip route 192.0.2.0/24 Null0"}}
links:
  - [h1, a1]
  - [a1, a2]
  - [a2, b1]
  - [b1, h2]
"""


def plan(text):
    return make_plan(loads(text, "t.yaml"))


def block(conf: str, header: str) -> list[str]:
    """The lines of one `interface X` (or `router ...`) block."""
    lines = conf.splitlines()
    start = lines.index(header)
    end = lines.index("exit", start)
    return lines[start + 1:end]


def test_ring_files_per_router():
    p = plan(RING)
    assert set(frr.configs(p, "r1")) == {"zebra.conf", "ospfd.conf", "vtysh.conf"}
    assert frr.configs(p, "r1")["vtysh.conf"] == "username root nopassword\n"
    assert frr.configs(p, "r1")["zebra.conf"] == "hostname r1\n"
    assert frr.daemons(p.topo, "r1") == ["zebra", "ospfd"]


def test_ring_costs_come_from_the_rate_leaving_the_interface_or_the_link():
    conf = frr.configs(plan(RING), "r2")["ospfd.conf"]
    # r2 eth0 toward r1: 10 Mbit -> 100 Mbit / 10 Mbit = 10
    assert " ip ospf cost 10" in block(conf, "interface eth0")
    # r2 eth1 toward r3: a_to_b 30 Mbit -> ceil(100/30) = 4
    assert " ip ospf cost 4" in block(conf, "interface eth1")
    conf3 = frr.configs(plan(RING), "r3")["ospfd.conf"]
    # r3's side of r2-r3 sends b_to_a at 1 Gbit: 100M/1G rounds up to 1 (never 0)
    assert " ip ospf cost 1" in block(conf3, "interface eth0")
    # r4-r1 gives cost: 7, both ends
    assert " ip ospf cost 7" in block(frr.configs(plan(RING), "r4")["ospfd.conf"], "interface eth1")
    assert " ip ospf cost 7" in block(frr.configs(plan(RING), "r1")["ospfd.conf"], "interface eth2")


def test_ring_network_types_passive_hosts_and_timers():
    conf = frr.configs(plan(RING), "r3")["ospfd.conf"]
    to_r2, to_switch, to_host = (block(conf, f"interface eth{k}") for k in range(3))
    assert " ip ospf network point-to-point" in to_r2
    assert " ip ospf network broadcast" in to_switch
    assert " ip ospf passive" in to_host and not any("network" in x or "hello" in x for x in to_host)
    for active in (to_r2, to_switch):
        assert " ip ospf hello-interval 1" in active and " ip ospf dead-interval 4" in active
        assert " ip ospf passive" not in active
    assert all(" ip ospf area 0.0.0.0" in b for b in (to_r2, to_switch, to_host))
    assert block(conf, "interface lo") == [" ip ospf area 0.0.0.0"]
    router = block(conf, "router ospf")
    assert " ospf router-id 10.255.0.3" in router
    assert " timers throttle spf 10 50 5000" in router
    assert " timers throttle lsa all 0" in router and " timers lsa min-arrival 0" in router
    # the raw lines come last, after netrig's own
    assert conf.rstrip().endswith(" max-metric router-lsa on-startup 5")


def test_ring_expected_routes_and_adjacencies():
    p = plan(RING)
    want = frr.expected_routes(p)
    r1 = {str(k): v for k, v in want["r1"].items()}
    assert r1 == {"10.0.2.0/24": "link r2-r3", "10.0.3.0/24": "switch s1",
                  "10.0.5.0/24": "link h2-r3", "10.255.0.2/32": "loopback of r2",
                  "10.255.0.3/32": "loopback of r3", "10.255.0.4/32": "loopback of r4"}
    # 6 subnets and 4 loopbacks, less the router's own subnets and loopback
    assert {r: len(w) for r, w in want.items()} == {"r1": 6, "r2": 7, "r3": 6, "r4": 7}
    assert frr.expected_adjacencies(p) == {"r1": {"eth1": 1, "eth2": 1}, "r2": {"eth0": 1, "eth1": 1},
                                           "r3": {"eth0": 1, "eth1": 1}, "r4": {"eth0": 1, "eth1": 1}}
    assert frr.default_wait_s(p.topo) == 30 + 3 * 4


def test_two_as_bgp_neighbours_and_announcements():
    p = plan(TWO_AS)
    a2 = frr.configs(p, "a2")["bgpd.conf"]
    lines = a2.splitlines()
    assert "router bgp 65001" in lines and " bgp router-id 10.255.0.2" in lines
    assert " no bgp ebgp-requires-policy" in lines and " no bgp network import-check" in lines
    assert " timers bgp 1 3" in lines
    # eBGP to b1 on the a2-b1 link; iBGP to a1's loopback with update-source lo
    b1_addr = str(p.iface(p.topo.link_named("a2", "b1"), 1).addr.ip)
    assert f" neighbor {b1_addr} remote-as 65002" in lines
    assert " neighbor 10.255.0.1 remote-as 65001" in lines
    assert " neighbor 10.255.0.1 update-source lo" in lines
    assert f" neighbor {b1_addr} update-source lo" not in lines
    assert f" neighbor {b1_addr} timers connect 2" in lines and f" neighbor {b1_addr} advertisement-interval 0" in lines
    af = lines[lines.index(" address-family ipv4 unicast"):lines.index(" exit-address-family")]
    assert "  neighbor 10.255.0.1 next-hop-self" in af and f"  neighbor {b1_addr} next-hop-self" not in af
    nets = [x.split()[1] for x in af if x.startswith("  network ")]
    # a border router announces its AS's other loopbacks too (a1's, learnt over iBGP
    # with itself as next hop, would never cross the border)
    assert nets == ["10.0.1.0/24", "10.0.2.0/24", "10.255.0.2/32", "10.255.0.1/32"]
    a1 = frr.configs(p, "a1")["bgpd.conf"].splitlines()
    assert [x.split()[1] for x in a1 if x.startswith("  network ")] == ["10.0.0.0/24", "10.0.1.0/24", "10.255.0.1/32"]
    # a1 and a2 run OSPF toward each other, not toward b1 (another AS): passive there
    ospf = frr.configs(p, "a2")["ospfd.conf"]
    assert " ip ospf network point-to-point" in block(ospf, "interface eth0")
    assert " ip ospf passive" in block(ospf, "interface eth1")


def test_two_as_raw_lines_and_staticd_only_when_given():
    p = plan(TWO_AS)
    b1 = frr.configs(p, "b1")
    assert set(b1) == {"zebra.conf", "bgpd.conf", "staticd.conf", "vtysh.conf"}
    assert b1["bgpd.conf"].rstrip().endswith("! hello from the file")
    assert "ip route 192.0.2.0/24 Null0" in b1["staticd.conf"]
    assert frr.daemons(p.topo, "b1") == ["zebra", "staticd", "bgpd"]
    assert "staticd.conf" not in frr.configs(p, "a1") and "ospfd.conf" not in b1


def test_two_as_expected_routes_cross_the_as_boundary():
    p = plan(TWO_AS)
    want = {r: {str(k) for k in w} for r, w in frr.expected_routes(p).items()}
    # b1 (AS 65002, BGP only) learns what AS 65001's routers announce
    assert want["b1"] == {"10.0.0.0/24", "10.0.1.0/24", "10.255.0.1/32", "10.255.0.2/32"}
    # a1 learns a2's side by OSPF and AS 65002's by iBGP from a2
    assert want["a1"] == {"10.0.2.0/24", "10.0.3.0/24", "10.255.0.2/32", "10.255.0.3/32"}
    assert frr.expected_adjacencies(p) == {"a1": {"eth1": 1}, "a2": {"eth0": 1}}


def test_convergence_waits_for_every_bgp_session_not_just_a_route():
    # a2 speaks eBGP to b1 and iBGP to a1 by loopback; a route learnt over the first
    # session up is not yet the best one, so every session must be Established
    p = plan(TWO_AS)
    sessions = frr.expected_bgp_peers(p)
    b1 = next(str(i.addr.ip) for i in p.ifaces["b1"])
    assert sessions["a2"] == {b1: 65002, "10.255.0.1": 65001}
    assert sessions["a1"] == {"10.255.0.2": 65001}
    up = [{"address": b1, "as": 65002, "state": "Established", "received": 2},
          {"address": "10.255.0.1", "as": 65001, "state": "Active", "received": 0}]
    assert frr.not_established(sessions["a2"], up) == ["10.255.0.1 (AS 65001, Active)"]
    assert frr.not_established(sessions["a1"], []) == ["10.255.0.2 (AS 65001, not configured)"]
    up[1]["state"] = "Established"
    assert frr.not_established(sessions["a2"], up) == []


def test_a_switch_with_three_routers_expects_the_dr_and_bdr_full():
    p = plan("""
nodes: {s: switch, r1: {kind: router, ospf: true}, r2: {kind: router, ospf: true},
        r3: {kind: router, ospf: true}}
links: [[r1, s], [r2, s], [r3, s]]
""")
    assert frr.expected_adjacencies(p) == {r: {"eth0": 2} for r in ("r1", "r2", "r3")}


def test_neighbour_and_peer_json_as_frr_8_prints_them():
    doc = {"neighbors": {"10.255.0.2": [{"nbrState": "Full/-", "ifaceName": "eth0:10.0.0.1"},
                                        {"nbrState": "Init/-", "ifaceName": "eth1:10.0.1.1"}]}}
    got = frr.ospf_neighbours(doc)
    assert got == [{"id": "10.255.0.2", "state": "Full/-", "iface": "eth0"},
                   {"id": "10.255.0.2", "state": "Init/-", "iface": "eth1"}]
    assert frr.full_by_iface(got) == {"eth0": 1}
    peers = frr.bgp_peers({"ipv4Unicast": {"peers": {"10.0.0.2": {"remoteAs": 65002, "state": "Established",
                                                                   "pfxRcd": 3, "peerUptimeMsec": 4000}}}})
    assert peers == [{"address": "10.0.0.2", "as": 65002, "state": "Established", "received": 3,
                      "up_ms": 4000}]
    assert frr.bgp_peers({}) == [] and frr.ospf_neighbours({}) == []


def test_a_routed_lab_without_frr_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("NETRIG_FRR_DIR", str(tmp_path))
    with pytest.raises(LabError) as e:
        frr.check_installed(loads(RING, "t.yaml"))
    msg = str(e.value)
    assert msg.startswith("FRR is not installed: apt-get install frr, or bash scripts/install.sh")
    assert str(tmp_path / "zebra") in msg and "r1, r2, r3, r4" in msg
    frr.check_installed(loads("nodes: {h1: host, r1: router}\nlinks: [[h1, r1]]\n", "t.yaml"))  # static: fine


def test_build_refuses_before_creating_anything(tmp_path, monkeypatch):
    from netrig.lab import build

    monkeypatch.setenv("NETRIG_FRR_DIR", str(tmp_path))
    made = []
    monkeypatch.setattr(build.netns, "add", lambda names: made.append(names))
    monkeypatch.setattr(build.LabState, "save", lambda self: made.append("state"))
    with pytest.raises(LabError, match="FRR is not installed"):
        build.build(plan(RING), prefix="nofrr")
    assert made == []


def test_loopback_networks_are_host_routes():
    p = plan(RING)
    assert all(lo.network.prefixlen == 32 for lo in p.loopbacks.values())
    assert ipaddress.ip_network("10.255.0.1/32") in frr.expected_routes(p)["r2"]


def test_convergence_waits_out_bgps_coalesce_time_and_watches_its_table_version():
    # bgpd holds a new update subgroup's first UPDATEs 1 s + 50 ms per peer (at most 10 s):
    # a table still for less than that is not settled.
    assert frr.bgp_coalesce_s(3) == 1.15
    assert frr.bgp_coalesce_s(1000) == 10.0
    assert frr.bgp_table_version({"ipv4Unicast": {"tableVersion": 25, "peers": {}}}) == 25
    assert frr.bgp_table_version({}) is None


def test_a_session_just_up_is_not_yet_settled():
    want = {"10.0.12.2": 65002, "10.255.0.1": 65001}
    peers = frr.bgp_peers({"ipv4Unicast": {"peers": {
        "10.0.12.2": {"remoteAs": 65002, "state": "Established", "pfxRcd": 0, "peerUptimeMsec": 1000},
        "10.255.0.1": {"remoteAs": 65001, "state": "Established", "pfxRcd": 4, "peerUptimeMsec": 9000},
        "10.9.9.9": {"remoteAs": 1, "state": "Established", "peerUptimeMsec": 0}}}})
    assert frr.too_new(want, peers, 2.9) == ["10.0.12.2 (AS 65002, up 1.0 s of 2.9 s)"]
    assert frr.too_new(want, peers, 0.5) == []


def _line(n: int, ospf: dict | None = None, frr_lines: str | None = None) -> Topology:
    t = Topology(f"line{n}", pool="10.0.0.0/12", routing={"ospf": {"hello": "1s", **(ospf or {})}})
    for i in range(1, n + 1):
        t.router(f"r{i}", ospf=True, frr={"ospfd": frr_lines} if frr_lines and i == 1 else None)
        if i > 1:
            t.link(f"r{i - 1}", f"r{i}")
    return t


def _throttle(t) -> str:
    router = block(frr.configs(make_plan(t), "r1")["ospfd.conf"], "router ospf")
    return next(x for x in router if x.startswith(" timers throttle spf"))


def test_spf_throttle_grows_with_the_lab_where_the_file_gives_none():
    assert spf_throttle_ms(1) == spf_throttle_ms(100) == (0, 50, 5000)  # FRR's own
    assert spf_throttle_ms(101) == (101, 404, 5000)
    assert spf_throttle_ms(500) == (500, 2000, 5000) and spf_throttle_ms(1000) == (1000, 4000, 10000)
    assert _throttle(_line(3)) == " timers throttle spf 0 50 5000"
    big = _line(150)
    assert big.ospf_routers == 150 and big.ospf_ms("spf_hold") == 600
    assert _throttle(big) == " timers throttle spf 150 600 5000"
    # only OSPF routers count
    big.router("b1", bgp=65001)
    assert big.ospf_routers == 150
    big.router("o1", ospf=True)
    assert big.ospf_routers == 151 and big.ospf_ms("spf_delay") == 151


def test_a_given_spf_throttle_and_raw_lines_win_over_the_scaled_one():
    t = _line(150, {"spf_delay": "10ms", "spf_max_hold": "2s"})
    assert _throttle(t) == " timers throttle spf 10 600 2000"  # the hold not given: scaled
    raw = "router ospf\n timers throttle spf 0 50 5000\nexit"
    conf = frr.configs(make_plan(_line(150, frr_lines=raw)), "r1")["ospfd.conf"]
    ours, theirs = conf.index(" timers throttle spf 150 600 5000"), conf.index(" timers throttle spf 0 50 5000")
    assert ours < theirs  # FRR applies the later: the file's own line wins
    assert conf.rstrip().endswith(raw)
