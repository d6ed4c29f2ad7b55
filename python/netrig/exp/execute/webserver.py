"""The web server of a run's `web` flows: Debian's nginx, one per destination node.

It owns nginx's side only: the objects it serves (files of the flows' sizes), its
configuration, starting it in the node's namespace (a master in the foreground, `daemon
off`, and one worker) and stopping it by the PIDs it recorded (the master, then any
worker left: a worker outlives a killed master). The client side (curl, what a fetch
measured) is exp/kinds/web.py.

Who may do what, as Debian's nginx does it: the master runs as root, reads its
configuration, certificate and key (in the lab's directory, root's alone) and opens
the logs; its worker, which talks to the network, runs as `www-data`. The worker reads
the objects from `RUN/www/PREFIX/NODE` (root's, group www-data, 0750; files 0640; the
directories above it searchable by that group only), and can write nowhere netrig
reads. The logs (access.log, error.log, nginx.out) are in the run's directory
(RUN_DIR/web-NODE/): files netrig creates there, through a descriptor of that
directory it holds, and hands to nginx as descriptors (/proc/self/fd/N), so nginx opens
no path in the results directory.

Listeners, fixed in the node's fresh namespace (no other server there uses them):

    8080  HTTP/1.1, cleartext (keep-alive)
    8081  HTTP/2 over cleartext TCP, prior knowledge (h2c; nginx serves no HTTP/1.1 there)
    8443  TLS 1.3, HTTP/1.1 or HTTP/2 by ALPN (only when a flow asks for tls), with a
          self-signed certificate made for the run

gzip is off (the objects would not shrink anyway: their bytes are a seeded PRNG's),
sendfile on, keep-alive without a practical limit (a run's connection is never closed
by the server), and no access to anything outside the object directory.
"""

from __future__ import annotations

import grp
import os
import pwd
import random
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from netrig import safefs
from netrig.errors import NetrigError
from netrig.exp.kinds.web import PORT_H2C, PORT_HTTP1, PORT_TLS, object_name
from netrig.exp.preflight import webtools
from netrig.lab.state import daemon_dir


class WebServerError(NetrigError):
    pass


def object_bytes(size: int) -> bytes:
    """A deterministic object of `size` bytes: a PRNG seeded by the size (not zeros,
    which a compressing path would shrink)."""
    return random.Random(size).randbytes(size)


USER = "www-data"  # Debian's nginx's `user`


def config(prefix: Path, www: Path, logs: dict[str, str], tls: bool) -> str:
    """nginx.conf for one node's server; `logs`: the error and access logs' paths
    ("error", "access")."""
    tmp = prefix / "tmp"
    listen = [f"listen {PORT_HTTP1};", f"listen {PORT_H2C} http2;"]
    if tls:
        listen += [f"listen {PORT_TLS} ssl http2;", f"ssl_certificate {prefix / 'cert.pem'};",
                   f"ssl_certificate_key {prefix / 'key.pem'};", "ssl_protocols TLSv1.3;"]
    server = "\n        ".join(listen)
    return f"""\
# netrig: a web flow's server (exp/execute/webserver.py); started by PID, stopped by PID.
worker_processes 1;
user {USER} {USER};
pid {prefix / 'nginx.pid'};
error_log {logs['error']} info;
events {{ worker_connections 1024; }}
http {{
    log_format netrig '$msec $remote_addr:$remote_port "$request" $status $body_bytes_sent '
                      '$request_time conn=$connection req=$connection_requests $server_port';
    access_log {logs['access']} netrig;
    client_body_temp_path {tmp};
    proxy_temp_path {tmp};
    fastcgi_temp_path {tmp};
    uwsgi_temp_path {tmp};
    scgi_temp_path {tmp};
    types {{ application/octet-stream bin; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    gzip off;
    server_tokens off;
    keepalive_timeout 3600s;
    keepalive_requests 1000000;
    server {{
        {server}
        root {www};
        location / {{ try_files $uri =404; }}
    }}
}}
"""


@dataclass
class WebServer:
    """nginx in one node: `start()` writes its files and starts it, `stop()` ends it."""

    node: str
    ns: str
    prefix: Path  # in the lab's directory: config, pid file, certificate, key
    www: Path  # the objects, which its worker (www-data) reads
    logs: safefs.Held  # the run's RUN_DIR/web-NODE: access.log, error.log, nginx.out
    sizes: set[int]
    tls: bool = False
    proc: subprocess.Popen | None = None
    workers: dict[int, int | None] = field(default_factory=dict)  # pid -> start time

    @property
    def ports(self) -> list[int]:
        return [PORT_HTTP1, PORT_H2C] + ([PORT_TLS] if self.tls else [])

    def write(self, logs: dict[str, str]) -> Path:
        """The object files, the certificate (tls) and nginx.conf; returns the latter."""
        for d in (self.prefix, self.prefix / "tmp"):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        share = www_share()
        run = self.www.parents[2]  # RUN of RUN/www/PREFIX/NODE
        rel = self.www.relative_to(run)
        safefs.shared_dir(run, rel, share)
        worker = pwd.getpwnam(USER)
        blocked = safefs.unreachable_by(self.www, worker.pw_uid, {worker.pw_gid, share.gid})
        if blocked is not None:
            raise WebServerError(f"nginx's worker runs as {USER}, which may not enter {blocked} "
                                 f"(mode {stat.S_IMODE(os.stat(blocked).st_mode):04o}) on the way to "
                                 f"the objects in {self.www}: give NETRIG_RUN_DIR a directory it can")
        for size in sorted(self.sizes):
            safefs.write_shared(run, rel / object_name(size), object_bytes(size), share)
        if self.tls:
            _certificate(self.prefix)
        conf = self.prefix / "nginx.conf"
        conf.write_text(config(self.prefix, self.www, logs, self.tls))
        return conf

    def start(self, timeout: float = 10.0) -> None:
        """Starts nginx in the node's namespace and waits for its listeners."""
        from netrig.lab.network import _tcp_listening

        exe = webtools.nginx_path()
        if exe is None:
            raise WebServerError(f"node {self.node}: nginx is not installed "
                                 f"(apt-get install {webtools.NGINX_PACKAGE})")
        with self.logs.open_new("nginx.out") as out, self.logs.open_new("error.log") as err, \
                self.logs.open_new("access.log") as acc:
            fds = {"error": err.fileno(), "access": acc.fileno()}
            paths = {k: f"/proc/self/fd/{fd}" for k, fd in fds.items()}
            conf = self.write(paths)
            argv = ["ip", "netns", "exec", self.ns, str(exe), "-c", str(conf), "-p", f"{self.prefix}/",
                    "-e", paths["error"], "-g", "daemon off;"]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, pass_fds=tuple(fds.values()))
        deadline = time.monotonic() + timeout
        while not all(_tcp_listening(self.proc.pid, p) for p in self.ports):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = " ".join(self.logs.read_tail(f, 300) for f in ("nginx.out", "error.log")).strip()
                self.stop()
                raise WebServerError(f"nginx for node {self.node} did not start"
                                     f" (ports {', '.join(map(str, self.ports))})"
                                     + (f": {said}" if said else ""))
            time.sleep(0.01)
        self._note_workers()

    def _note_workers(self) -> None:
        if self.proc is None:
            return
        for pid in _children(self.proc.pid):
            self.workers.setdefault(pid, _start_time(pid))

    def stop(self) -> None:
        """Ends nginx by its PIDs: SIGTERM to the master (its fast shutdown ends the
        workers), SIGKILL after 5 s, and then any recorded worker still there."""
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            self._note_workers()
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        for pid, started in self.workers.items():
            if started is not None and _start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def pids(self) -> list[int]:
        """The master's and the workers' PIDs (what a test checks is gone)."""
        return ([self.proc.pid] if self.proc else []) + list(self.workers)


def www_share() -> safefs.Shared:
    """How the objects are shared with nginx's worker: group www-data, files 0640."""
    try:
        gid = grp.getgrnam(USER).gr_gid
        pwd.getpwnam(USER)
    except KeyError:
        raise WebServerError(f"there is no user or group {USER}, which nginx's worker runs as "
                             f"(Debian's nginx package creates it: apt-get install "
                             f"{webtools.NGINX_PACKAGE})") from None
    return safefs.Shared(gid, leaf=0o750)


class WebServers:
    """A run's web servers: one nginx per destination node of its web flows, its files
    under LAB_DIR/web/NODE, its objects under RUN/www/PREFIX/NODE and its logs in the
    run's directory (RUN_DIR/web-NODE/)."""

    def __init__(self, lab_dir: Path, results: Path, run_rel: str) -> None:
        self.dir = lab_dir / "web"
        self.www = daemon_dir(lab_dir, "www")
        self.results, self.run_rel = results, run_rel
        self.servers: list[WebServer] = []

    def start(self, node: str, ns: str, sizes: set[int], tls: bool) -> WebServer:
        logs = safefs.Held(self.results, f"{self.run_rel}/web-{node}")
        self.dir.mkdir(mode=0o700, exist_ok=True)
        w = WebServer(node, ns, self.dir / node, self.www / node, logs, sizes, tls)
        self.servers.append(w)  # before it starts: stop() ends it whatever happens
        w.start()
        return w

    def stop(self) -> None:
        """Stops every server by its PIDs and removes their files from the lab."""
        try:
            for w in self.servers:
                w.stop()
                w.logs.close()
        finally:
            remove(self.dir.parent)


def remove(lab_dir: Path) -> None:
    """Removes a lab's web files: LAB_DIR/web and RUN/www/PREFIX."""
    web = lab_dir / "web"
    if web.is_dir() and not web.is_symlink():
        shutil.rmtree(web, ignore_errors=True)
    safefs.remove_tree(lab_dir.parent.parent, f"www/{lab_dir.name}")


def _certificate(prefix: Path) -> None:
    """A self-signed P-256 certificate for the run (curl is told not to verify it)."""
    argv = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", str(prefix / "key.pem"), "-out", str(prefix / "cert.pem"),
            "-days", "2", "-subj", "/CN=netrig"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WebServerError(f"could not make the TLS certificate with openssl: {e}") from e
    if p.returncode != 0:
        raise WebServerError(f"openssl could not make the TLS certificate: {p.stderr.strip()[-300:]}")


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _start_time(pid: int) -> int | None:
    from netrig.lab.frr import start_time

    return start_time(pid)
