"""Preemption: SIGTERM or SIGINT ends a training run at a step boundary with a checkpoint (:class:`Signals`,
:class:`Preempted`), and :class:`StopClock` decides the stops and timed saves on the host. The protocol and its
timings: docs/training.md (Resume, preemption and damage; The loop on the host)."""

from __future__ import annotations

import collections
import math
import signal
import threading
import time

import numpy as np

#: the signals that stop a run cleanly
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_status(signum: int) -> int:
    """128 + the signal number (SIGTERM 143, SIGINT 130): non-zero, so a scheduler reruns the job, which
    resumes (``docs/training.md``)."""
    return 128 + int(signum)


class Preempted(Exception):
    """The run stopped on a signal after saving a checkpoint at ``step``. ``signal_step``: the step this process
    was at when the signal came (None: the signal came to another process); ``at``: when (``time.monotonic``;
    for another process's signal, when this process learnt of it)."""

    def __init__(self, signum: int, step: int, signal_step: int | None, at: float):
        self.signum, self.step, self.signal_step, self.at = int(signum), int(step), signal_step, float(at)
        super().__init__(self.line())

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def status(self) -> int:
        return exit_status(self.signum)

    def line(self, now: float | None = None) -> str:
        """``kifunet train: SIGTERM at step 130: checkpoint saved at step 131 (2.1 s); resume with the same
        command`` (seconds from the signal to ``now``, default: now). "At step S" is the last step that had ended
        when the signal came; the checkpoint is at S + 1 (the step in progress), or at S when the signal landed
        between step S's end and the loop's look at the flag."""
        where = f"at step {self.signal_step:,}" if self.signal_step is not None else "on another process"
        took = (time.monotonic() if now is None else now) - self.at
        return (f"kifunet train: {self.name} {where}: checkpoint saved at step {self.step:,} ({took:.1f} s); "
                f"resume with the same command")


class Signals:
    """SIGTERM / SIGINT watch for a ``with`` block (main thread only; previous handlers restored). The first signal
    records :attr:`signum`, :attr:`signal_step` and :attr:`at` and resets both handlers, so a second kills at once."""

    def __init__(self):
        self.signum = 0
        self.step = 0
        self.signal_step: int | None = None
        self.at: float | None = None
        self._old: dict = {}

    def _handle(self, signum, frame) -> None:
        if self.signum:  # a second signal that raced the first one's handler: the default action
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        self.signum, self.signal_step, self.at = int(signum), self.step, time.monotonic()
        for s in SIGNALS:
            signal.signal(s, signal.SIG_DFL)

    def __enter__(self) -> "Signals":
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.getsignal(s) for s in SIGNALS}
            for s in SIGNALS:
                signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, old in self._old.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
        self._old = {}


class Decision(collections.namedtuple("Decision", "stop save signum")):
    """What :meth:`StopClock.decide` says after a step: ``stop`` ('time', 'signal' or None), ``save`` (a checkpoint
    is due by time), ``signum`` (the signal that stops the run, 0 for none)."""


#: the decision of a step that decides nothing
CARRY_ON = Decision(None, False, 0)


class StopClock:
    """The loop's host-side decisions after a step (:meth:`decide`), from the wall clock and signal flag only:
    stop at ``limit_s`` of training time, stop on a signal, save every ``save_every_s``. Several processes decide at
    agreed steps in one collective (``broadcast``), so all stop or save at the same step."""

    def __init__(self, limit_s: float, elapsed_before: float = 0.0, *, process_count: int = 1, sync_s: float = 2.0,
                 broadcast=None, clock=time.perf_counter, signals=None, save_every_s: float = 0.0):
        self.limit = float(limit_s or 0.0)
        self.before = float(elapsed_before)
        self.process_count = int(process_count)
        self.sync_s = float(sync_s)
        self.save_every = float(save_every_s or 0.0)
        self._signals = signals
        self._broadcast = broadcast
        self._clock = clock
        self._t0 = self._saved = clock()
        self._next = None  # next step at which the processes agree (None: the first step checked)
        self._last = None  # (step, clock) of the last agreement

    def elapsed(self) -> float:
        return self.before + self._clock() - self._t0

    def used_up(self) -> bool:
        """The limit was reached by earlier runs (every process reads the same ``elapsed_before``)."""
        return self.limit > 0 and self.before >= self.limit

    def saved(self) -> None:
        """A checkpoint was saved now: the time-based interval starts again."""
        self._saved = self._clock()

    def over(self, step: int) -> bool:
        """Whether the run stops after ``step`` (:meth:`decide`)."""
        return self.decide(step).stop is not None

    def decide(self, step: int) -> Decision:
        if self.limit <= 0 and self._signals is None and self.save_every <= 0:
            return CARRY_ON
        now = self._clock()
        local = self.limit > 0 and self.before + now - self._t0 >= self.limit
        signum = int(self._signals.signum) if self._signals is not None else 0
        save = self.save_every > 0 and now - self._saved >= self.save_every
        if self.process_count > 1:
            if self._next is not None and step < self._next:
                return CARRY_ON
            step_s = (now - self._last[1]) / (step - self._last[0]) if self._last and step > self._last[0] else 0.0
            left = max(self.limit - (self.before + now - self._t0), 0.0) if self.limit > 0 else math.inf
            ahead = max(1, int(min(self.sync_s, left) / step_s)) if step_s > 0 else 1
            broadcast = self._broadcast
            if broadcast is None:
                from jax.experimental import multihost_utils

                broadcast = multihost_utils.process_allgather
            from kifunet.train.dispatch import fetch

            rows = np.atleast_2d(np.asarray(fetch(broadcast(np.asarray([int(local), step + ahead, signum, int(save)],
                                                                        np.int64)))))
            self._last = (step, now)
            self._next = int(rows[0, 1])
            local, save = bool(rows[0, 0]), bool(rows[0, 3]) if rows.shape[1] > 3 else False
            signum = int(rows[:, 2].max()) if rows.shape[1] > 2 else 0
        stop = "signal" if signum else ("time" if local else None)
        return Decision(stop, bool(save), signum)


def preempted(signals: Signals | None, signum: int, step: int) -> Preempted:
    """The :class:`Preempted` of a run stopped by ``signum`` once its checkpoint at ``step`` is saved, with the step
    and time ``signals`` (the run's watch) recorded for the signal (no watch: no step; a watch that saw no signal of
    its own: now)."""
    at = signals.at if signals is not None and signals.at is not None else time.monotonic()
    return Preempted(signum, step, signals.signal_step if signals is not None else None, at)


__all__ = ["CARRY_ON", "Decision", "Preempted", "SIGNALS", "Signals", "StopClock", "exit_status", "preempted"]
