"""Datasets for the training tests, built by the real ``kifunet build`` from random legal 9x9 games.

Session fixtures (imported by tests/test_input_pipeline.py, test_train*.py, test_checkpointing.py):

* ``ds_maddison``: 60 games, ``maddison`` planes (36), chunks of 32 rows, shards of at most 600 rows,
  test split = a 20% game-hash share;
* ``ds_maddison_packbits``: the same games with the ``packbits`` plane layout (the pipeline's slow path);
* ``ds_gonn``: 30 games with the ``gonn`` planes (26, five previous-move planes: history dropout);
* ``ds_qiqiao``: 40 games with the ``qiqiao`` planes (10) whose results vary (:data:`QIQIAO_RESULTS`, in turn:
  wins of either colour, a draw, an unknown result), for the value head's tests.

:func:`pipeline` opens a dataset as the trainer does, for the input pipeline's tests.
"""

from __future__ import annotations

import pytest

import os

from kifunet.cli import main as cli_main
from test_build import random_game, write_corpus

#: the RE of game i of ``ds_qiqiao`` is QIQIAO_RESULTS[i % 6] (None: no RE, an unknown result)
QIQIAO_RESULTS = ("B+R", "W+3.5", "W+R", "0", None, "B+T")


def input_config(**overrides):
    """The default config's ``input`` section with ``overrides`` (e.g. ``workers=0``, ``window_blocks=2``)."""
    from kifunet.train.configs import default

    cfg = default.get_config().input
    for k, v in overrides.items():
        cfg[k] = v
    return cfg


def pipeline(spec, split: str = "train", *, eval_split: str = "", profile: bool = False, **overrides):
    """``(TrainData, input config)`` of ``spec``'s ``split`` read with the default input config plus
    ``overrides``: the first two arguments of ``input_pipeline.train_iterator`` and ``window_dataset``."""
    from kifunet.train.data import TrainData

    cfg = input_config(**overrides)
    return TrainData.open_datasets(spec, split, cfg, eval_split=eval_split, profile=profile), cfg


def build_dataset(root, *, games: int, features: str = "maddison", planes: str = "codes", moves: int = 60,
                  chunk_rows: int = 32, shard_size: int = 600, results=None) -> str:
    corpus = root / "sgf"
    if not corpus.exists() and results is None:
        write_corpus(corpus, games, moves=moves)
    elif not corpus.exists():
        os.makedirs(corpus)
        for i in range(games):
            (corpus / f"g{i:04d}.sgf").write_bytes(random_game(i, moves=moves, result=results[i % len(results)]))
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


#: one instance per session of the fixtures below, however many test modules import them (pytest makes a session
#: fixture imported into two modules twice)
_ONCE: dict = {}


@pytest.fixture(scope="session")
def ds_qiqiao(tmp_path_factory):
    if "ds_qiqiao" not in _ONCE:
        _ONCE["ds_qiqiao"] = build_dataset(tmp_path_factory.mktemp("train_ds_qiqiao"), games=40, features="qiqiao",
                                           results=QIQIAO_RESULTS)
    return _ONCE["ds_qiqiao"]


@pytest.fixture(scope="session")
def qiqiao_run(ds_qiqiao, tmp_path_factory):
    """8 steps of ``qiqiao_tiny`` (the tiny config, value_weight 1) on ``ds_qiqiao``, a final evaluation on the
    whole test split: ``(run dir, dataset, final metrics, the printed log)``."""
    if "qiqiao_run" not in _ONCE:
        _ONCE["qiqiao_run"] = _train_qiqiao(ds_qiqiao, tmp_path_factory)
    return _ONCE["qiqiao_run"]


def _train_qiqiao(ds_qiqiao, tmp_path_factory):
    import contextlib
    import io
    from pathlib import Path

    from kifunet.train import configs
    from kifunet.train.train import train_and_evaluate

    tiny = Path(__file__).resolve().parents[1] / "train" / "configs" / "tiny.py"
    cfg = configs.load(str(tiny), [("dataset", ds_qiqiao), ("model.name", "qiqiao_tiny"),
                                   ("expect_features", "qiqiao"), ("value_weight", "1.0"),
                                   ("train_positions", "256"), ("log_every_steps", "4"),
                                   ("eval_every_positions", "0"), ("final_eval_positions", "0"),
                                   ("checkpoint_every_positions", "0"), ("async_checkpoints", "false")])
    run = tmp_path_factory.mktemp("qiqiao_run") / "run"
    out = io.StringIO()
    import jax

    old = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)  # it compiles more than it computes
    try:
        with contextlib.redirect_stdout(out):
            final = train_and_evaluate(cfg, str(run))
    finally:
        jax.config.update("jax_disable_most_optimizations", old)
    return run, ds_qiqiao, final, out.getvalue()
