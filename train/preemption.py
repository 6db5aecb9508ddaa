"""Preemption: SIGTERM or SIGINT ends a training run at a step boundary, with a checkpoint, within seconds.

Preemptible VMs and TPUs, Slurm and Kubernetes send SIGTERM and kill the job about 30 s later; Ctrl-C sends
SIGINT. Contract of :class:`Signals` (a context manager around training,
:func:`kifunet.train.train.train_and_evaluate`):

* it installs its handlers only in the main thread (Python runs handlers there only; elsewhere it installs
  nothing and :attr:`Signals.signum` stays 0), only for the ``with`` block, and restores the previous handlers
  on exit, so in-process callers (tests, ``kifunet quickstart``) keep their own;
* the first SIGTERM or SIGINT only records itself (:attr:`Signals.signum`, the step the loop was at, the time);
  the training loop reads it after the step in progress (several processes: at the next step they agree on,
  :class:`kifunet.train.train.StopClock`), saves a checkpoint, flushes its metrics, stops its input workers and
  raises :class:`Preempted`; ``kifunet train`` prints :meth:`Preempted.line` and exits with
  :meth:`Preempted.status`;
* the first signal also resets both handlers to the default action, so a second signal kills the process at
  once, whatever it is doing -- even inside a device computation, where a Python handler would wait: no further
  checkpoint, the status of a process killed by that signal (-15 or -2 to a parent, 143 or 130 in a shell).

Several processes (``jax.distributed``): a signal to any of them stops all of them at one step, the next at which
they exchange their flags (:class:`kifunet.train.train.StopClock`: four numbers gathered from every process about
every 2 s of steps); each saves its share of the collective checkpoint and exits with the same status, and process
0 prints the line (``on another process`` when the signal was not its own).

Time from the signal to the exit: the steps already dispatched (at most ``max_steps_ahead`` beyond the one in
progress) must finish before the state can be saved, then the save, the input workers' stop and the interpreter's
exit. Measured by benchmarks/bench_preemption.py on the project's 2 shared cores at a load average of 6-7
(benchmarks/results/preemption.json): ``cpu_default`` 9.3 s (its step took 2.18 s under that load), ``agz_tiny_value``
3.2 s (step 0.32 s), ``qiqiao`` 2.2 s (step 0.22 s).
"""

from __future__ import annotations

import signal
import threading
import time

#: the signals that stop a run cleanly
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_status(signum: int) -> int:
    """128 + the signal number (SIGTERM 143, SIGINT 130): non-zero, so Slurm (``--requeue``) and Kubernetes
    (``restartPolicy: OnFailure``, ``podFailurePolicy`` on exit code 143) rerun the job, which resumes; 0 would
    mark it finished, and 143 / 130 is what a shell reports for a process that the signal ended."""
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
    """SIGTERM / SIGINT watch for the duration of a ``with`` block (module docstring). The training loop sets
    :attr:`step` after each step; a signal records :attr:`signum`, :attr:`signal_step` and :attr:`at`."""

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


__all__ = ["Preempted", "SIGNALS", "Signals", "exit_status"]
