"""TEMPORARY (lead's local stand-in until the capture branch lands)."""
import subprocess

from netrig.errors import NetrigError


def compile_bpf(expr, linktype="EN10MB"):
    p = subprocess.run(["tcpdump", "-ddd", "-y", linktype, expr], capture_output=True, text=True)
    if p.returncode:
        raise NetrigError(f"filter '{expr}': {p.stderr.strip()}")
    lines = p.stdout.split("\n")[1:]
    return [tuple(int(x) for x in ln.split()) for ln in lines if ln.strip()]
