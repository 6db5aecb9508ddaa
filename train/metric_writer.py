"""Metrics out: JSON lines (``metrics_train.jsonl``, ``metrics_eval.jsonl``; process 0 only) and TensorBoard
scalars, and the trainer's stdout lines (:func:`progress_line`, :func:`eval_line`). A failed write raises an
``OSError`` naming the file or folder (the format and failure handling: docs/training.md, The loop on the host)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
import traceback

from kifunet.data_prep.fileio import atomic, store

KINDS = ("train", "eval")

#: ``OSError`` s raised in tensorboardX's event-writer threads (a full disk), kept for :meth:`MetricWriter.close`
_THREAD_ERRORS: list = []
_previous_excepthook = None


def _keep_tensorboard_thread_errors(args) -> None:
    """``threading.excepthook``: an ``OSError`` in one of tensorboardX's writer threads is kept, not printed as a
    traceback (the run reports a full disk in one line); anything else goes to the previous hook."""
    frames = traceback.extract_tb(args.exc_traceback)
    if isinstance(args.exc_value, OSError) and any("tensorboardX" in f.filename for f in frames):
        _THREAD_ERRORS.append(args.exc_value)
        return
    _previous_excepthook(args)


def _install_excepthook() -> None:
    global _previous_excepthook
    if _previous_excepthook is None:
        _previous_excepthook = threading.excepthook
        threading.excepthook = _keep_tensorboard_thread_errors


class MetricWriter:
    def __init__(self, workdir: str, *, enabled: bool = True, tensorboard: bool = True):
        self.workdir = workdir
        self.enabled = enabled
        self._tb = None
        if enabled:
            store.makedirs(workdir)
            if tensorboard:
                from tensorboardX import SummaryWriter

                _install_excepthook()
                self._tb = SummaryWriter(logdir=os.path.join(workdir, "tensorboard"))

    def path(self, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        return os.path.join(self.workdir, f"metrics_{kind}.jsonl")

    def write(self, kind: str, step: int, metrics: dict) -> None:
        """One JSON line and its TensorBoard scalars; a value may be a dict one level down (a mixture's
        ``by_dataset``), nested in the JSON line and tagged ``<kind>/<key>/<name>/<metric>``."""
        if not self.enabled:
            return
        rec = {"step": int(step), "time": round(time.time(), 3)}
        scalars = []
        for k, v in metrics.items():
            if isinstance(v, dict):
                rec[k] = {name: {m: _json_float(x) for m, x in sub.items()} for name, sub in v.items()}
                scalars += [(f"{kind}/{k}/{name}/{m}", x) for name, sub in v.items() for m, x in sub.items()]
            else:
                rec[k] = _json_float(v)
                scalars.append((f"{kind}/{k}", v))
        with _naming(self.path(kind)):
            store.append_text(self.path(kind), json.dumps(rec) + "\n")
        if self._tb is not None and not _THREAD_ERRORS:  # a dead writer thread would fill its queue and block
            for tag, v in scalars:
                if tag != f"{kind}/step" and math.isfinite(float(v)):
                    self._tb.add_scalar(tag, float(v), int(step))

    def write_text(self, tag: str, text: str) -> None:
        if self._tb is not None and not _THREAD_ERRORS:
            self._tb.add_text(tag, text)

    def truncate_after(self, step: int) -> None:
        """Drop the JSON lines of steps after ``step`` (a run resumed from ``step``)."""
        if not self.enabled:
            return
        for kind in KINDS:
            p = self.path(kind)
            if not store.exists(p):
                continue
            with store.open(p, encoding="utf-8") as f:
                lines = f.readlines()
            keep = []
            for ln in lines:
                try:
                    if json.loads(ln)["step"] <= step:
                        keep.append(ln)
                except (ValueError, KeyError):
                    continue  # a line cut by the crash
            if len(keep) != len(lines):
                atomic.write_text_atomic(p, "".join(keep))

    def flush(self) -> None:
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writer; if that fails (``OSError`` naming ``WORKDIR/tensorboard``), its
        background thread is stopped and tensorboardX's own close at exit made a no-op."""
        tb, self._tb = self._tb, None
        if tb is None:
            return
        folder = os.path.join(self.workdir, "tensorboard")
        if _THREAD_ERRORS:  # a writer thread died on a write: stop the others, report the first error
            _abandon(tb)
            e = _THREAD_ERRORS[0]
            raise OSError(e.errno, e.strerror or os.strerror(e.errno or 0), folder) from e
        try:
            with _naming(folder):
                tb.close()
        except OSError:
            _abandon(tb)
            raise


@contextlib.contextmanager
def _naming(path: str):
    """An ``OSError`` that names no file (a buffered write failing as the file closes) re-raised naming ``path``."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror or os.strerror(e.errno), path) from e


def _abandon(tb) -> None:
    """Stop a tensorboardX ``SummaryWriter`` whose flush failed without writing again: each event writer's thread
    ends and the writer counts as closed (its ``atexit`` close then does nothing)."""
    writers = list(getattr(tb, "all_writers", {}).values()) or [getattr(tb, "file_writer", None)]
    for fw in writers:
        ew = getattr(fw, "event_writer", None)
        if ew is None:
            continue
        worker = getattr(ew, "_worker", None)
        if worker is not None:
            with contextlib.suppress(Exception):
                worker.stop()
        ew._closed = True


def _json_float(v):
    """A metric as JSON holds it: a float, or its text when not finite ("nan", "inf")."""
    v = float(v)
    return v if math.isfinite(v) else str(v)


def read_jsonl(path: str) -> list[dict]:
    """All records of a metrics file."""
    with store.open(path, encoding="utf-8") as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def fmt_time(s: float) -> str:
    """Seconds as ``H:MM:SS`` (negative: 0)."""
    s = int(max(0, s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def value_text(rec: dict) -> str:
    """`` value mse 0.8123 (constant 0.9900) winner 61.20%`` for a record with value metrics, else ``''``."""
    if "value_known" not in rec:
        return ""
    if "value_mse" not in rec:
        return " value: no known results"
    base = f" (constant {rec['value_baseline_mse']:.4f})" if "value_baseline_mse" in rec else ""
    win = f" winner {100 * rec['winner_acc']:.2f}%" if "winner_acc" in rec else ""
    return f" value mse {rec['value_mse']:.4f}{base}{win}"


def head_text(rec: dict) -> str:
    """The trained heads' figures of a record (``''`` for a run without them): a training record's
    `` ownership loss 0.4123 score loss 0.0872``, an evaluation's `` ownership 76.42% of 6,875 owned points score
    MAE 8.34 points``."""
    parts = [f" {h} loss {rec[f'{h}_loss']:.4f}" for h in ("ownership", "score") if f"{h}_loss" in rec]
    if "ownership_acc" in rec:
        parts.append(f" ownership {100 * rec['ownership_acc']:.2f}% of {rec['ownership_points']:,.0f} owned points")
    if "score_mae" in rec:
        parts.append(f" score MAE {rec['score_mae']:.2f} points")
    return "".join(parts)


def progress_line(step: int, total_steps: int, batch_size: int, rec: dict, eta: float) -> str:
    """The stdout line of a training record ``rec`` at ``step`` (``eta``: seconds left, NaN when unknown)."""
    rate = rec.get("positions_per_s", 0.0)
    speed = (f"{rate:,.0f} pos/s, data wait {100 * rec['data_wait_fraction']:.1f}%" if rate > 0
             else "compiling")
    return (f"step {step:,}/{total_steps:,} ({step * batch_size:,} positions, {100 * step / total_steps:.1f}%) "
            f"loss {rec['loss']:.4f} top1 {100 * rec['top1']:.2f}% top4 {100 * rec['top4']:.2f}%"
            f"{value_text(rec)}{head_text(rec)} | grad {rec['grad_norm']:.3g} (max {rec['grad_norm_max']:.3g}) "
            f"|logit| max {rec['logit_abs_max']:.3g} | {speed} | "
            f"ETA {fmt_time(eta) if math.isfinite(eta) else '?'}")


def eval_line(step: int, split: str, rec: dict, dataset: str | None = None) -> str:
    """The stdout line of an evaluation record ``rec`` at ``step`` on ``split`` (of ``dataset``, in a mixture)."""
    return (f"eval at step {step:,} on {int(rec['eval_positions']):,} {split} positions"
            f"{f' of {dataset}' if dataset else ''}: top1 {100 * rec['top1']:.2f}% top4 {100 * rec['top4']:.2f}% "
            f"nats {rec['nats']:.4f}{value_text(rec)}{head_text(rec)} ({rec['seconds']:.1f} s)")
