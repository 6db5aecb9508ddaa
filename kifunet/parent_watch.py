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

    ``parent_pid`` need not be the direct parent (a ``forkserver`` worker watches the pool's owner). A daemon
    thread polls every :data:`PARENT_POLL_S` and calls ``os._exit`` when ``parent_pid`` is gone or the worker was
    re-parented. The worker also ignores SIGINT and SIGTERM (its parent stops it). Extra positional arguments
    (grain's worker index and count) are ignored. Why a poll and not ``PR_SET_PDEATHSIG``: docs/training.md.
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
