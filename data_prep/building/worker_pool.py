"""Worker processes for the build's parallel stages, with crash isolation.

:class:`WorkerPool` is the ``forkserver`` pool (stage modules preloaded) the encode and write stages share. When a
worker dies, every task in flight fails with ``BrokenProcessPool``; the caller collects them and
:meth:`WorkerPool.restart`\\ s the pool. :func:`run_isolated` reruns one such task alone, calling it as
``fn(*args, True, skip)``: the task writes each item's index to ``marker`` before the item and rejects, without
processing, the indices in ``skip``; after a crash the marker's item joins ``skip`` and the task runs again.
Workers do not re-run the caller's ``__main__``, exit with their parent (:func:`kifunet.parent_watch.exit_with_parent`)
and ignore SIGINT and SIGTERM.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import multiprocessing.context
import os
import sys
import types
from collections.abc import Callable, Sequence

from kifunet.parent_watch import exit_with_parent

# imported once in the forkserver, so that each worker starts with them loaded
PRELOAD = ["kifunet.data_prep.building.encode_stage", "kifunet.data_prep.building.write_stage",
           "kifunet.data_prep.planes.replay", "kifunet.data_prep.sgf.sgf_io", "kifunet.data_prep.planes.features",
           "h5py"]


# what a worker's start-up sees as the parent's __main__: no __file__ nor __spec__, so nothing to re-run
_NO_MAIN = types.ModuleType("__main__")


class _Process(multiprocessing.context.ForkServerProcess):
    """A ``forkserver`` process whose start-up does not run the parent's ``__main__`` (see the module
    docstring): the parent's ``__main__`` is swapped out only while the process's start-up data is written."""

    @staticmethod
    def _Popen(process_obj):
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = _NO_MAIN
        try:
            return multiprocessing.context.ForkServerProcess._Popen(process_obj)
        finally:
            sys.modules["__main__"] = main


class _Context(multiprocessing.context.ForkServerContext):
    Process = _Process


def _executor(workers: int) -> cf.ProcessPoolExecutor:
    """``workers`` processes of :func:`mp_context`, each ending when this process does (:func:`exit_with_parent`)."""
    return cf.ProcessPoolExecutor(workers, mp_context=mp_context(), initializer=exit_with_parent,
                                  initargs=(os.getpid(),))


def mp_context():
    """The multiprocessing context of the build's workers (``forkserver`` with :data:`PRELOAD`, the caller's
    ``__main__`` not re-run)."""
    ctx = _Context()
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


class WorkerPool:
    """``workers`` worker processes, shared by the build's stages; :meth:`restart` replaces a broken pool."""

    def __init__(self, workers: int):
        self.workers = workers
        self._ex = _executor(workers)

    def submit(self, fn: Callable, *args) -> cf.Future:
        return self._ex.submit(fn, *args)

    def map(self, fn: Callable, items):
        """``fn`` over ``items`` in the workers; the results in the order of ``items``."""
        return self._ex.map(fn, items)

    def close(self):
        """Stop the workers (tasks not started are cancelled)."""
        self._ex.shutdown(wait=True, cancel_futures=True)

    def restart(self):
        self.close()
        self._ex = _executor(self.workers)


def run_isolated(fn: Callable, args: tuple, *, marker: str, names: Sequence[str], label: str,
                 log: Callable[[str], None]):
    """Run ``fn(*args, True, skip)`` in a fresh single process per attempt, skipping each item that kills the
    worker (see the module docstring); returns ``fn``'s result. ``names``: the items' names, for the log;
    ``label``: the task's, for the error raised when a worker dies with no item in progress."""
    skip: list[int] = []
    while True:
        if os.path.exists(marker):
            os.remove(marker)
        with _executor(1) as ex:
            fut = ex.submit(fn, *args, True, tuple(skip))
            try:
                return fut.result()
            except cf.process.BrokenProcessPool:
                try:
                    with open(marker) as f:
                        bad = int(f.read().strip())
                except (OSError, ValueError):
                    raise RuntimeError(f"{label}: a worker process died before its first record (its error, if "
                                       "any, is printed above); nothing to reject") from None
                log(f"worker crashed on {names[bad]}; rejecting it (worker_crash)")
                skip.append(bad)
