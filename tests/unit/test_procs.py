"""Ending a child: SIGTERM first, SIGKILL after the grace period, always reaped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from netrig.procs import end


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_and_reaped():
    p = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                          "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = time.monotonic()
    end(p, grace_s=0.3)
    assert p.returncode == -signal.SIGKILL and time.monotonic() - t < 10
    q = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    end(q)
    assert q.returncode == -signal.SIGTERM
    end(q)  # an ended one: nothing
