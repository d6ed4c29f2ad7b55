"""The prompt's netrig commands (a part of `mininet.cli.CLI`, where Mininet's prompt has
none of them): `link ... set KEY=VALUE` changes a link while it runs, `status` shows the
lab as netrig status does, `graph` draws it as it runs now; and Mininet's `link N1 N2
up|down`. Each needs a netrig lab (a net with a prefix) and says so otherwise. Mininet
has no such module.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from mininet.log import error, output


class LabCommands:
    """`link`, `status` and `graph` on the prompt's net (`self.mn`)."""

    def do_link(self, line: str) -> None:
        """Take a link down or up, or change it live (netrig's set).

        link NODE1 NODE2 up|down
        link NODE1 NODE2 set KEY=VALUE... [dir=a_to_b|b_to_a]   (netrig's)
        link LINK set KEY=VALUE... [dir=a_to_b|b_to_a]          (by the link's name)
        e.g. link h1 s1 down
             link s1 s2 set delay=50ms loss=1%
             link s1 s2 set rate=10Mbit aqm=pie aqm.target=10ms"""
        args = line.split()
        if "set" in args:
            self._link_set(args[: args.index("set")], args[args.index("set") + 1:])
        elif len(args) != 3:
            error("invalid number of args: link end1 end2 [up down]\n")
        elif args[2] not in ("up", "down"):
            error("invalid type: link end1 end2 [up down]\n")
        elif self._nodes(args[:2]) is not None:
            self.mn.configLinkStatus(*args)

    def _link_set(self, ends: list[str], words: list[str]) -> None:
        example = f"link {' '.join(ends) or 's1 s2'} set delay=50ms"
        set_link = getattr(self.mn, "set_link", None)
        if set_link is None:
            error("*** link set: this network cannot change a link while it runs (it is not "
                  "a netrig lab); netrig mininet, netrig mn and netrig cli can\n")
            return
        direction = [w.partition("=")[2] for w in words if w.startswith("dir=")]
        params = [w for w in words if not w.startswith("dir=")]
        bad = [w for w in params if "=" not in w or w.startswith("=")]
        if bad or not params or len(direction) > 1:
            why = (f"'{bad[0]}' is not KEY=VALUE" if bad else "dir= given twice" if direction[1:]
                   else "nothing to set")
            error(f"*** link set: {why} (e.g. {example}, or dir=a_to_b for one direction)\n")
            return
        said = " ".join(ends)
        if len(ends) == 1:
            ends = self._link_named(ends[0])
            if not ends:
                return
            said += f" ({ends[0]} {ends[1]})"
        elif len(ends) != 2:
            error(f"*** link set: a link is two nodes or one link's name, then set (e.g. {example})\n")
            return
        elif self._nodes(ends) is None:
            return
        from netrig.topo.load import link_params

        set_link(ends[0], ends[1], dir=direction[0] if direction else None, **link_params(params))
        output(f"link {said}: set {' '.join(words)}\n")

    def _lab_state(self) -> Any:
        """The lab's state as it is now, read again (tc lines in the nodes and other
        processes change it); None for a net that is no netrig lab (no prefix)."""
        prefix = getattr(self.mn, "prefix", None)
        if not prefix:
            return None
        from netrig.lab.state import LabState

        return LabState.load(prefix)

    def _link_named(self, name: str) -> list[str]:
        st = self._lab_state()
        links = st.plan.get("links", []) if st else []
        for link in links:
            if link["name"] == name:
                return [link["a"], link["b"]]
        error(f"*** link set: no link named '{name}'{self._near(name, [x['name'] for x in links], 'links')}; "
              "or give the link's two nodes (e.g. link s1 s2 set delay=50ms)\n")
        return []

    # netrig's view of the lab.
    def do_status(self, _line: str) -> None:
        """netrig's status of the lab: links as they run, queues, drops.

        Nodes and addresses, each link's shaping as it runs now, each emulated
        direction's live queue, drops and lateness (netrig status)."""
        prefix = getattr(self.mn, "prefix", None)
        if not prefix:
            error("*** status: this network is not a netrig lab (it has no prefix); "
                  "'dump' and 'links' describe it\n")
            return
        from netrig.lab import status

        said = io.StringIO()
        with contextlib.redirect_stdout(said):  # as every answer: through mininet.log
            status.show(prefix)
        output(said.getvalue())

    def do_graph(self, line: str) -> None:
        """Draw the lab as it runs now: graph [FILE.svg|FILE.png]

        As text here, or into FILE (.svg or .png); live link changes included."""
        args = line.split()
        if len(args) > 1:
            error("*** usage: graph [FILE.svg|FILE.png]\n")
            return
        st = self._lab_state()
        if st is None:
            error("*** graph: this network is not a netrig lab (it has no prefix, no plan to "
                  "draw); 'net' lists its connections\n")
            return
        from netrig.lab import status

        drawn = status.drawing(st, args[0] if args else None)
        output(drawn if not args else f"graph: wrote {drawn}\n")
