"""Training input from a TFDS ``go_moves`` dataset (array_record, read with ``tfds.data_source``; no TensorFlow).

Select it with a ``tfds:`` dataset::

    kifunet train --config train/configs/tiny.py --workdir /tmp/w \\
        --config.dataset=tfds:DATA_DIR/go_moves/kgs_maddison/1.0.0     # a prepared dataset directory
    kifunet train ... --config.dataset=tfds:go_moves/kgs_maddison@DATA_DIR
    kifunet train ... --config.dataset=tfds:go_moves/kgs_maddison      # $TFDS_DATA_DIR or ~/tensorflow_datasets

(:func:`kifunet.train.input_pipeline.block_source` and ``describe`` hand a ``tfds:`` dataset to this module.) The
pipeline is the HDF5 one with another source: :class:`TfdsBlockSource` (element ``i`` =
``block_rows`` consecutive records of the split) -> grain shuffle of blocks, windows of ``window_blocks`` blocks
-> :class:`kifunet.train.input_pipeline.WindowBuilder` (row shuffle, symmetries, history dropout, constant
planes) -> :class:`kifunet.train.input_pipeline.BatchIterator` (checkpointable). TFDS wrote the records in
hash-of-key order, so consecutive records are already spread over games, as the HDF5 build's shuffled rows
are. Blocks decode through ``tfds.data_source`` (one record at a time in Python), so this source is slower
than the HDF5 one; ``input.workers`` grain processes build windows in parallel as usual.
"""

from __future__ import annotations

import os

import numpy as np

PREFIX = "tfds:"
DEFAULT_BLOCK_ROWS = 256


def is_tfds(dataset) -> bool:
    return isinstance(dataset, str) and dataset.startswith(PREFIX)


def parse(dataset: str) -> tuple[str, str | None]:
    """``tfds:DIR`` / ``tfds:NAME@DATA_DIR`` / ``tfds:NAME`` -> (dataset directory or name, data_dir)."""
    spec = dataset[len(PREFIX):] if is_tfds(dataset) else dataset
    if os.path.isfile(os.path.join(spec, "dataset_info.json")):
        return spec, None
    name, sep, data_dir = spec.partition("@")
    return name, (data_dir if sep else os.environ.get("TFDS_DATA_DIR") or None)


def reader(dataset: str, split: str):
    from kifunet.data_prep import tfds_go_moves

    name, data_dir = parse(dataset)
    return tfds_go_moves.TfdsReader(name, split, data_dir=data_dir, assemble=False)


class TfdsBlockSource:
    """grain ``RandomAccessDataSource`` over a TFDS split: element ``i`` = records ``i * block_rows ..``, as
    ``{"shard", "columns", "stored"}`` (the form :class:`~kifunet.train.input_pipeline.WindowBuilder` takes)."""

    def __init__(self, dataset: str, split: str, block_rows: int = 0):
        self.dataset, self.split = dataset, split
        self._reader = reader(dataset, split)
        self.board_size = self._reader.board_size
        self.feature_name = self._reader.feature_name
        self.block_rows = int(block_rows) if block_rows else DEFAULT_BLOCK_ROWS
        if self.block_rows < 1:
            raise ValueError("block_rows must be positive")
        self._rows = len(self._reader)

    def __getstate__(self):
        return {"dataset": self.dataset, "split": self.split, "block_rows": self.block_rows}

    def __setstate__(self, st):
        self.__init__(st["dataset"], st["split"], st["block_rows"])

    def __len__(self) -> int:
        return -(-self._rows // self.block_rows)

    def __repr__(self) -> str:
        return f"TfdsBlockSource({self.dataset!r}, {self.split!r}, block_rows={self.block_rows}, blocks={len(self)})"

    def num_rows(self) -> int:
        return self._rows

    def read(self, start: int, stop: int, tag: int = 0) -> dict:
        b = self._reader.batch(np.arange(start, stop))
        cols = {k: b[k] for k in self._reader.columns}
        cols["index"] = b["index"]
        return {"shard": int(tag), "columns": cols, "stored": b["stored"]}

    def __getitem__(self, index: int) -> dict:
        a = int(index) * self.block_rows
        return self.read(a, min(a + self.block_rows, self._rows), int(index))

    def read_rows(self, start: int, stop: int) -> list[dict]:
        return [self.read(start, stop)] if stop > start else []


def describe(dataset: str, split: str) -> dict:
    r = reader(dataset, split)
    return {"rows": len(r), "board_size": r.board_size, "features": r.feature_name, "num_planes": r.num_planes,
            "shards": 1}
