"""A `netrig ... &` a shell script started (bash starts a script's background jobs with
SIGINT ignored, which exec keeps) is still stopped by SIGINT, and exits 130."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.net  # (it runs `netrig mininet`, which netguard keeps from pure tests)


def test_a_netrig_started_with_sigint_ignored_is_stopped_by_it():
    # as bash starts `netrig run s.yaml &` in a script: SIGINT ignored, across exec
    p = subprocess.Popen([sys.executable, "-m", "netrig", "mininet", "-c",
                          "import time; print('ready', flush=True); time.sleep(30)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=10) == 130  # not after the 30 s sleep
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
