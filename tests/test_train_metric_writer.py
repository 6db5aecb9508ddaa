"""kifunet.train.metric_writer: one JSON line per write, non-finite values as text, a mixture's nested
``by_dataset`` kept nested (and as TensorBoard tags one level down)."""

from __future__ import annotations

import pytest

from kifunet.train.metric_writer import MetricWriter, read_jsonl


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
