"""The programs a `web` flow needs from the host, found by absolute path (`ip netns
exec` and a non-root PATH may lack /usr/sbin): Debian's nginx (exp/execute/webserver.py), curl
(exp/kinds/web.py) and, for TLS, openssl. The scenario check asks here, so that a machine
without them is told which package to install before anything is built.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

NGINX_PACKAGE = "nginx"  # Debian's (nginx-light/-core/-full only add modules to it)
CURL_PACKAGE = "curl"
_SEARCH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
# curl before 8.0 cannot reuse a cleartext HTTP/2 (prior knowledge) connection: every
# fetch after the first fails with "Error in the HTTP2 framing layer" (curl issue
# #10634, fixed in 8.0.0). Debian 12 ships 7.88.1.
H2C_REUSE_FIXED = (8, 0, 0)


def find(program: str) -> Path | None:
    found = shutil.which(program, path=_SEARCH)
    return Path(found) if found else None


def nginx_path() -> Path | None:
    return find("nginx")


def curl_path() -> Path | None:
    return find("curl")


def curl_version() -> tuple[int, ...] | None:
    """The installed curl's version, (7, 88, 1), or None when it cannot be run (asked
    once per process)."""
    exe = curl_path()
    return None if exe is None else _version(str(exe))


@functools.cache
def _version(exe: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"curl (\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


def missing(tls: bool = False) -> list[str]:
    """What a web flow needs that this machine lacks, each naming the Debian package
    to install."""
    out = []
    if nginx_path() is None:
        out.append(f"nginx (the web server: apt-get install {NGINX_PACKAGE})")
    if curl_path() is None:
        out.append(f"curl (the client: apt-get install {CURL_PACKAGE})")
    if tls and find("openssl") is None:
        out.append("openssl (the run's TLS certificate: apt-get install openssl)")
    return out
