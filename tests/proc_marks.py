"""Finding every process a command started, even after it died: a marker in the environment.

:func:`start_marked` runs a command with ``KIFUNET_TEST_MARK=<random>`` in its environment; every process it
starts inherits that variable (fork servers, resource trackers, pool workers, engines on pipes), and keeps it
when re-parented to PID 1 or moved to another session, so :func:`marked` finds them all by reading
``/proc/PID/environ`` -- no need to catch their pids while they live. :func:`kill_and_wait` sends the command a
signal and returns what of it is still alive some seconds later; :func:`reap` kills what a test leaves. Linux
(``/proc``), as root or as the processes' owner.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

VAR = "KIFUNET_TEST_MARK"


def marked(mark: str) -> dict[int, str]:
    """Live (non-zombie) processes whose environment holds ``VAR=mark``: pid -> command line."""
    needle = f"{VAR}={mark}".encode()
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2:].split()[0] not in ("Z", "X"):
            out[int(name)] = cmd
    return out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_marked(argv: list[str], *, log, cwd=None, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """``argv`` started with a fresh marker in its environment (stdout and stderr to the file ``log``), in a
    session of its own (a signal sent to it reaches that process only), with SIGINT's default action whatever the
    suite inherited (a shell starts a background job with SIGINT ignored); returns (process, marker)."""
    mark = uuid.uuid4().hex
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **(env or {}), VAR: mark}
    p = subprocess.Popen(argv, cwd=cwd, env=full, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True, preexec_fn=_default_sigint)
    return p, mark


def kifunet_argv(*args) -> list[str]:
    return [sys.executable, "-m", "kifunet.cli", *map(str, args)]


def wait_until(p: subprocess.Popen, mark: str, ready: Callable[[dict[int, str]], bool], timeout: float = 240,
               what: str = "") -> dict[int, str]:
    """Poll the marked processes until ``ready(them)`` while ``p`` runs; returns them (an AssertionError if ``p``
    ends first or ``timeout`` passes)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert p.poll() is None, f"the command ended (exit {p.returncode}) before {what}"
        procs = marked(mark)
        if ready(procs):
            return procs
        time.sleep(0.05)
    raise AssertionError(f"not {what} within {timeout} s: {marked(mark)}")


def kill_and_wait(p: subprocess.Popen, mark: str, sig: int, *, exit_s: float = 60, grace_s: float = 10,
                  group: bool = False) -> dict[int, str]:
    """Send ``sig`` to ``p`` only (``group``: to its whole process group, as Ctrl-C in a terminal does), wait up
    to ``exit_s`` for it to end, then up to ``grace_s`` for every marked process to end; returns those still
    alive then (``{}``: none left)."""
    if group:
        os.killpg(p.pid, sig)
    else:
        os.kill(p.pid, sig)
    p.wait(timeout=exit_s)
    deadline = time.time() + grace_s
    left = marked(mark)
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = marked(mark)
    return left


def reap(p: subprocess.Popen, mark: str) -> None:
    """Kill ``p`` and every marked process (the test's cleanup, whatever it found)."""
    for pid in [p.pid, *marked(mark)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()
