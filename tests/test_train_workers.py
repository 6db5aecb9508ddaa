"""The grain workers' lifecycle (train/workers.py): a worker ends when its parent is killed."""

from __future__ import annotations

import pytest


WATCHED_CHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", (
    "import os, sys, time\\n"
    "from kifunet.train.workers import exit_with_parent\\n"
    "exit_with_parent(os.getppid())\\n"
    "print('ready', flush=True)\\n"
    "time.sleep(120)\\n")], stdout=sys.stdout)
print(child.pid, flush=True)
time.sleep(30)
"""


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_exit_with_parent_ends_a_worker_whose_parent_is_killed(tmp_path):
    """The grain workers' init (``exit_with_parent``): a process watching its parent ends within a second of the
    parent's ``kill -9`` (tests/test_train_loop.py does the same with the trainer and its real worker)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen([sys.executable, "-c", WATCHED_CHILD], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        child = int(p.stdout.readline())
        assert p.stdout.readline().strip() == "ready"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.time() + 5
        alive = True
        while alive and time.time() < deadline:
            try:
                with open(f"/proc/{child}/stat") as f:
                    alive = f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
            except FileNotFoundError:
                alive = False
            time.sleep(0.05)
        assert not alive, "the watched process outlived its parent by 5 s"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
