"""Lifecycle of the input pipeline's grain worker processes: they end with the trainer, whatever ends it.

Contract: :func:`exit_with_parent` is the ``worker_init_fn`` of ``mp_prefetch``
(:func:`kifunet.train.input_pipeline.train_iterator`); :func:`mark_absl_flags_parsed` runs in the trainer before
the first worker starts.
"""

from __future__ import annotations

import os
import time

#: how often a worker process looks for its parent (seconds)
PARENT_POLL_S = 0.2


def exit_with_parent(parent_pid: int, worker_index: int = 0, worker_count: int = 1) -> None:
    """grain ``worker_init_fn``: end this worker process as soon as ``parent_pid`` (the trainer) is gone.

    A worker started by ``mp_prefetch`` (``multiprocessing`` spawn) holds a window buffer and the dataset, about
    340 MB; when the trainer dies without closing the iterator (``kill -9``, the OOM killer, a segfault), nothing
    else stops it: it is re-parented to PID 1 and waits forever, keeping ``multiprocessing``'s resource tracker
    (the second process left behind) alive too, since the tracker exits when the last process holding its pipe
    does. So each worker runs a daemon thread that polls its parent every :data:`PARENT_POLL_S` and calls
    ``os._exit`` when it was re-parented (``os.getppid()`` changed) or ``parent_pid`` no longer exists; the
    tracker then sees its pipe close, removes what the worker leaked, and exits.

    Not ``prctl(PR_SET_PDEATHSIG)``: on Linux that signal fires when the *thread* that forked the worker ends,
    and grain starts its workers from its own iterator threads, so a worker could be killed while the trainer
    is alive; it is Linux-only as well. The poll works for any signal and any POSIX system.

    The worker also ignores SIGINT and SIGTERM: sent to the whole process group (Ctrl-C in a terminal, systemd,
    Slurm), they would end the worker before the trainer, which stops after its step and checkpoint
    (:mod:`kifunet.train.preemption`) -- with a traceback on the terminal and the worker's shared memory left to
    multiprocessing's resource tracker. The trainer closes its workers itself, or they follow it out as above.
    """
    import signal
    import threading

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

    if first != parent_pid and gone():
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="kifunet-parent-watch", daemon=True).start()


def mark_absl_flags_parsed() -> None:
    """grain's worker processes read absl flags; outside an absl app nothing parsed them."""
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
