"""Metrics out: JSON lines (``metrics_train.jsonl``, ``metrics_eval.jsonl``) and TensorBoard event files.

Only process 0 writes (``enabled``); the others get a writer that drops everything. One JSON object per
line: ``{"step": ..., "positions": ..., "time": <unix seconds>, <metric>: <float>, ...}``; TensorBoard
scalars ``train/<metric>`` and ``eval/<metric>`` at x = step, in ``WORKDIR/tensorboard``.

A resumed run first drops the lines past the step it resumes from (:meth:`MetricWriter.truncate_after`),
so the files hold one line per step even after a crash.

A write that fails (a full disk) raises an ``OSError`` naming the file or folder written (:func:`_naming`; the
command line prints it in one line); a TensorBoard writer whose last flush failed is abandoned
(:meth:`MetricWriter.close`), so tensorboardX does not try again at exit (a traceback there, after the error line).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time

KINDS = ("train", "eval")


class MetricWriter:
    def __init__(self, workdir: str, *, enabled: bool = True, tensorboard: bool = True):
        self.workdir = workdir
        self.enabled = enabled
        self._tb = None
        if enabled:
            os.makedirs(workdir, exist_ok=True)
            if tensorboard:
                from tensorboardX import SummaryWriter

                self._tb = SummaryWriter(logdir=os.path.join(workdir, "tensorboard"))

    def path(self, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        return os.path.join(self.workdir, f"metrics_{kind}.jsonl")

    def write(self, kind: str, step: int, metrics: dict) -> None:
        """One JSON line and its TensorBoard scalars. A value may be a dict of metrics one level down (a
        mixture's ``by_dataset``: ``{dataset: {metric: v}}``): nested in the JSON line, TensorBoard tags
        ``<kind>/<key>/<name>/<metric>``."""
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
        with _naming(self.path(kind)), open(self.path(kind), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
        if self._tb is not None:
            for tag, v in scalars:
                if tag != f"{kind}/step" and math.isfinite(float(v)):
                    self._tb.add_scalar(tag, float(v), int(step))

    def write_text(self, tag: str, text: str) -> None:
        if self._tb is not None:
            self._tb.add_text(tag, text)

    def truncate_after(self, step: int) -> None:
        """Drop the JSON lines of steps after ``step`` (a run resumed from ``step``)."""
        if not self.enabled:
            return
        for kind in KINDS:
            p = self.path(kind)
            if not os.path.exists(p):
                continue
            with open(p, encoding="utf-8") as f:
                lines = f.readlines()
            keep = []
            for ln in lines:
                try:
                    if json.loads(ln)["step"] <= step:
                        keep.append(ln)
                except (ValueError, KeyError):
                    continue  # a line cut by the crash
            if len(keep) != len(lines):
                tmp = p + ".tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.writelines(keep)
                os.replace(tmp, p)

    def flush(self) -> None:
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writer; if that fails (``OSError`` naming ``WORKDIR/tensorboard``), its
        background thread is stopped and tensorboardX's own close at exit made a no-op."""
        tb, self._tb = self._tb, None
        if tb is None:
            return
        try:
            with _naming(os.path.join(self.workdir, "tensorboard")):
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
    with open(path, encoding="utf-8") as f:
        return [json.loads(ln) for ln in f if ln.strip()]
