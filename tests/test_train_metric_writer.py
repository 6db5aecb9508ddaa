"""kifunet.train.metric_writer: one JSON line per write, non-finite values as text, a mixture's nested
``by_dataset`` kept nested (and as TensorBoard tags one level down)."""

from __future__ import annotations


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
