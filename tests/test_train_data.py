"""Datasets for the training tests, built by the real ``kifunet build`` from random legal 9x9 games.

Session fixtures (imported by tests/test_input_pipeline.py, test_train.py, test_checkpointing.py):

* ``ds_maddison``: 60 games, ``maddison`` planes (36), chunks of 32 rows, shards of at most 600 rows,
  test split = a 20% game-hash share;
* ``ds_maddison_packbits``: the same games with the ``packbits`` plane layout (the pipeline's slow path);
* ``ds_gonn``: 30 games with the ``gonn`` planes (26, five previous-move planes: history dropout).
"""

from __future__ import annotations

import pytest

from kifunet.cli import main as cli_main
from test_build import write_corpus


def build_dataset(root, *, games: int, features: str = "maddison", planes: str = "codes", moves: int = 60,
                  chunk_rows: int = 32, shard_size: int = 600) -> str:
    corpus = root / "sgf"
    if not corpus.exists():
        write_corpus(corpus, games, moves=moves)
    out = root / f"ds-{features}-{planes}"
    rc = cli_main(["build", str(corpus), "--out", str(out), "--features", features, "--board-size", "9",
                   "--split", "train:rest", "--hash-split", "test:0.2", "--planes", planes, "--chunk-rows",
                   str(chunk_rows), "--shard-size", str(shard_size), "--workers", "0", "--no-progress"])
    assert rc == 0
    return str(out)


@pytest.fixture(scope="session")
def ds_maddison(tmp_path_factory):
    return build_dataset(tmp_path_factory.mktemp("train_ds"), games=60)


@pytest.fixture(scope="session")
def ds_maddison_packbits(tmp_path_factory):
    return build_dataset(tmp_path_factory.mktemp("train_ds_pb"), games=20, planes="packbits")


@pytest.fixture(scope="session")
def ds_gonn(tmp_path_factory):
    return build_dataset(tmp_path_factory.mktemp("train_ds_gonn"), games=30, features="gonn")
