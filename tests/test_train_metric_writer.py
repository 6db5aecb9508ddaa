"""kifunet.train.metric_writer: one JSON line per write, non-finite values as text, a mixture's nested
``by_dataset`` kept nested (and as TensorBoard tags one level down); the trainer's progress and evaluation lines."""

from __future__ import annotations

import pytest

from kifunet.train.metric_writer import MetricWriter, eval_line, fmt_time, progress_line, read_jsonl


class _Scalars:
    def __init__(self):
        self.tags = []

    def add_scalar(self, tag, value, step):
        self.tags.append((tag, value, step))


def test_nested_metrics_stay_nested_and_get_their_own_tags(tmp_path):
    w = MetricWriter(str(tmp_path), tensorboard=False)
    w._tb = tb = _Scalars()
    by = {"data/a": {"top1": 0.5, "nats": 2.0}, "data/b": {"top1": 0.25, "nats": float("inf")}}
    w.write("eval", 7, {"top1": 0.5, "nats": float("nan"), "by_dataset": by})
    (rec,) = read_jsonl(w.path("eval"))
    assert rec["step"] == 7 and rec["top1"] == 0.5 and rec["nats"] == "nan"
    assert rec["by_dataset"] == {"data/a": {"top1": 0.5, "nats": 2.0}, "data/b": {"top1": 0.25, "nats": "inf"}}
    assert sorted(t for t, _, _ in tb.tags) == ["eval/by_dataset/data/a/nats", "eval/by_dataset/data/a/top1",
                                                 "eval/by_dataset/data/b/top1", "eval/top1"]


def test_a_disabled_writer_writes_nothing(tmp_path):
    w = MetricWriter(str(tmp_path / "w"), enabled=False)
    w.write("train", 1, {"loss": 1.0})
    assert not (tmp_path / "w").exists()


def test_a_write_that_fails_in_tensorboards_thread_is_no_traceback_and_close_names_the_folder(tmp_path, monkeypatch,
                                                                                                 capsys):
    """A full disk can hit tensorboardX's writer thread first (issue 48, item 9): no thread traceback on stderr, no
    more events queued to the dead thread, and ``close`` raises an ``OSError`` naming ``WORKDIR/tensorboard``."""
    import errno
    import threading

    from kifunet.train import metric_writer

    monkeypatch.setattr(metric_writer, "_THREAD_ERRORS", [])
    w = metric_writer.MetricWriter(str(tmp_path))
    record_writer = w._tb.file_writer.event_writer._ev_writer._py_recordio_writer

    def full(data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(record_writer, "write", full)
    w.write("train", 1, {"loss": 1.0})
    deadline = __import__("time").monotonic() + 10
    while not metric_writer._THREAD_ERRORS and __import__("time").monotonic() < deadline:
        threading.Event().wait(0.05)
    assert metric_writer._THREAD_ERRORS, "the writer thread did not fail"
    for step in range(2, 40):  # more than the queue holds: must not block
        w.write("train", step, {"loss": 1.0})
    with pytest.raises(OSError) as e:
        w.close()
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "tensorboard")
    assert "Traceback" not in capsys.readouterr().err


def test_progress_and_eval_lines():
    rec = {"loss": 5.25, "top1": 0.125, "top4": 0.25, "grad_norm": 0.5, "grad_norm_max": 0.75, "logit_abs_max": 3.0,
           "positions_per_s": 1234.0, "data_wait_fraction": 0.015}
    assert progress_line(10, 40, 32, rec, 3725.0) == (
        "step 10/40 (320 positions, 25.0%) loss 5.2500 top1 12.50% top4 25.00% | grad 0.5 (max 0.75) "
        "|logit| max 3 | 1,234 pos/s, data wait 1.5% | ETA 1:02:05")
    first = {k: v for k, v in rec.items() if k not in ("positions_per_s", "data_wait_fraction")}
    assert progress_line(1, 40, 32, first, float("nan")).endswith("| compiling | ETA ?")
    value = {"value_known": 10.0, "value_mse": 0.5, "winner_acc": 0.625}
    ev = {"eval_positions": 64.0, "top1": 0.5, "top4": 0.75, "nats": 2.0, "seconds": 1.25, **value}
    assert eval_line(20, "test", ev, "DS") == ("eval at step 20 on 64 test positions of DS: top1 50.00% top4 75.00% "
                                               "nats 2.0000 value mse 0.5000 winner 62.50% (1.2 s)")
    assert fmt_time(-5) == "0:00:00" and fmt_time(59.9) == "0:00:59"
