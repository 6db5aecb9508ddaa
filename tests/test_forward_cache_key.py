"""The forward cache's key tells apart two nets that differ only in their weights (play/forward_cache.py).

Two ``agz_tiny`` 9x9 runs of the same architecture, feature set, board size and step, created from different
seeds: everything :func:`kifunet.play.forward_cache.entry_key` reads besides the checkpoint's checksums is the
same, so a key without the checksums would give the second net the first one's cached program and weights.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from kifunet.data_prep.game import BLACK, WHITE
from kifunet.play import forward_cache, lazy_policy
from kifunet.play import policy as policy_mod
from model_helpers import _fast_compiles  # noqa: F401 -- autouse: unoptimised XLA compiles in this module

MOVES = [(BLACK, 40), (WHITE, 30), (BLACK, 22)]


def _save(run, net, step: int = 3) -> None:
    from flax import nnx

    from kifunet.train import checkpointing

    run.mkdir(parents=True)
    _, params, extra = nnx.split(net, nnx.Param, ...)
    ck = checkpointing.Checkpointer(str(run / "checkpoints"), async_save=False)
    ck.save(step, {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(step)}, {"position": step},
            {"step": step, "board_size": 9, "feature_set": "agz"})
    ck.close()
    (run / "config.json").write_text(json.dumps({"model": {"name": "agz_tiny"}}))


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Two runs, ``a`` and ``b``: one architecture, different weights."""
    from kifunet import models
    from model_helpers import rngs

    root = tmp_path_factory.mktemp("twins")
    for name, seed in (("a", 1), ("b", 2)):
        _save(root / name, models.create("agz_tiny", board_size=9, rngs=rngs(seed)))
    return str(root / "a"), str(root / "b")


def test_two_nets_that_differ_only_in_weights_get_two_keys(twins):
    from kifunet.train.nets import describe_net

    a, b = (describe_net(run) for run in twins)
    same = ("model", "model_kwargs", "rank_embedding", "feature_set", "board_size", "step")
    assert all(a[k] == b[k] for k in same)  # nothing but the weights tells them apart
    assert forward_cache.entry_key(a) != forward_cache.entry_key(b)


def test_the_second_net_plays_with_its_own_weights_from_a_shared_cache(twins, tmp_path):
    cache = str(tmp_path / "jax")
    cached = {}
    for run in (*twins, *twins):  # each run's first start writes its entry; the second runs the exported one
        lazy = lazy_policy.lazy_run_policy(run, rank="5d", compile_cache=cache)
        assert lazy.wait(300) and lazy.error is None, lazy.error
        cached[run] = lazy.policy()
    probs = {}
    for run in twins:
        assert isinstance(cached[run], forward_cache.ExportedPolicy), type(cached[run])
        normal = policy_mod.load_policy(run, rank="5d").probabilities(MOVES, WHITE)
        probs[run] = cached[run].probabilities(MOVES, WHITE)
        np.testing.assert_allclose(probs[run], normal, atol=1e-6)
    assert np.abs(probs[twins[0]] - probs[twins[1]]).max() > 1e-3  # the weights differ, so do the policies
    entries = [e.name for e in os.scandir(cache + "-forward") if not e.name.startswith(".")]
    assert len(entries) == 2, entries
