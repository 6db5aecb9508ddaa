"""Worker processes that end with the process that started them, whatever ends it.

Contract: :func:`exit_with_parent` runs in a worker process (as its pool initializer or its first call) and
makes it ``os._exit`` within :data:`PARENT_POLL_S` of the given parent's death -- by ``kill -9``, the OOM killer,
a segfault or a signal without a handler, cases in which the parent closes nothing. Used by the build's worker
pool (:mod:`kifunet.data_prep.building.worker_pool`) and the training input's grain workers
(:mod:`kifunet.train.workers`).
"""

from __future__ import annotations

import os
import signal
import threading
import time

#: how often a worker process looks for its parent (seconds)
PARENT_POLL_S = 0.2


def exit_with_parent(parent_pid: int, *_ignored) -> None:
    """End this process as soon as ``parent_pid`` is gone; call it once, early, in the worker.

    ``parent_pid`` need not be the worker's direct parent: a ``forkserver`` worker's parent is the fork server,
    which lives as long as any worker does, so the worker watches the process that owns the pool. A daemon
    thread polls every :data:`PARENT_POLL_S` and calls ``os._exit`` when ``parent_pid`` no longer exists or the
    worker was re-parented (``os.getppid()`` changed). Multiprocessing's helpers then go too: the fork server
    exits when its last client closes its pipe, the resource tracker when the last holder of its pipe does.

    Not ``prctl(PR_SET_PDEATHSIG)``: on Linux that signal fires when the *thread* that forked the worker ends
    (grain starts its workers from its own iterator threads), it follows the direct parent only (the fork
    server, not the pool's owner), and it is Linux-only. The poll works for any signal and any POSIX system.

    The worker also ignores SIGINT and SIGTERM: sent to the whole process group (Ctrl-C in a terminal, systemd,
    Slurm), they would end it before its parent, which stops in order (closing its workers) or not at all; a
    worker ended first prints a traceback and leaves its shared memory to the resource tracker. Extra
    positional arguments (grain passes the worker's index and count) are ignored.
    """
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(s, signal.SIG_IGN)
        except ValueError:  # not the worker's main thread: keep the default
            pass
    first = os.getppid()

    def gone() -> bool:
        if os.getppid() != first:
            return True
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # exists, owned by someone else: cannot tell, keep working
            return False
        return False

    if gone():
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="kifunet-parent-watch", daemon=True).start()
