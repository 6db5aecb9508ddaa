"""Background prefetch: the next items of an iterator, mapped (e.g. put on the devices) in a thread ahead of use."""

from __future__ import annotations

import queue
import threading
import time


class Prefetcher:
    """``fn(next(iterator))`` in a background thread, ``depth`` items ahead, in order; :attr:`state` is the
    iterator's state after the last item handed out (None without ``get_state``); an exception is raised to the
    consumer at its item; ``wait_s`` sums the time the consumer waited."""

    _DONE = object()

    def __init__(self, iterator, fn=lambda x: x, depth: int = 2):
        self._it, self._fn = iterator, fn
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._stateful = hasattr(iterator, "get_state")
        self.state = iterator.get_state() if self._stateful else None
        self.wait_s = 0.0
        self._thread = threading.Thread(target=self._run, name="kifunet-prefetch", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                item = next(self._it)
                st = self._it.get_state() if self._stateful else None
                out = self._fn(item)
                while not self._stop.is_set():
                    try:
                        self._q.put((out, st), timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._q.put((self._DONE, e))

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        out, st = self._q.get()
        self.wait_s += time.perf_counter() - t0
        if out is self._DONE:
            raise st if isinstance(st, BaseException) else StopIteration
        self.state = st
        return out

    def close(self):
        self._stop.set()
        try:
            while True:
                self._q.get_nowait()
        except queue.Empty:
            pass
        self._thread.join(timeout=5)
