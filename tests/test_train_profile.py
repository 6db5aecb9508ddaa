"""The profile input in training and evaluation (issue 33): windows carry each row's profile, a profiled net
trains, is evaluated with the profile of its rows or with fields forced (``evaluate(profile=...)``), and loads."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.data_prep import profiles
from kifunet.data_prep.datasets.dataset import open_split
from kifunet.train.batches import batch_spec, window_batch
from kifunet.train.windows import WindowBuilder
from test_train_data import ds_maddison  # noqa: F401  (session fixture)

TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train", "configs", "tiny.py")


def _window(ds, rows=200, **kw):
    split = open_split(ds, "train", assemble=False, profile=True)
    blocks = split.blocks(64)
    src = [blocks[i] for i in range(min(len(blocks), -(-rows // 64)))]
    b = WindowBuilder(split.feature_name, split.board_size, 32, symmetry="none", shuffle=False, profile=True, **kw)
    return split, b.build(src, None)


def test_windows_carry_each_row_s_profile(ds_maddison):  # noqa: F811
    split, win = _window(ds_maddison)
    whole = open_split(ds_maddison, "train", profile=True).batch(list(win["index"]))
    want = profiles.encode_rows(whole["player_rank"], whole["opponent_rank"],
                                *(whole[k] for k in profiles.GAME_FIELDS))
    np.testing.assert_array_equal(win["profile"], want)
    assert (win["profile"][:, profiles.FIELD_SLICES["date"]][:, -1] == 0).all()  # the fixture games have dates
    batch = window_batch(win, 0, 32)
    assert batch["profile"].shape == (32, profiles.SIZE) and batch["profile"].dtype == np.float32
    spec = batch_spec(32, 9, split.num_planes, profile=True)
    assert set(spec) == set(batch) and spec["profile"] == ((32, profiles.SIZE), np.dtype(np.float32))
    assert "profile" not in batch_spec(32, 9, split.num_planes)


def test_forced_fields_replace_only_themselves(ds_maddison):  # noqa: F811
    _, own = _window(ds_maddison)
    fields = profiles.parse_fields("year=2005,source=fox")
    _, forced = _window(ds_maddison, profile_fields=fields)
    p = profiles.encode(profiles.Profile(**fields))
    for name, sl in profiles.FIELD_SLICES.items():
        if name in ("date", "source"):
            assert (forced["profile"][:, sl] == p[sl]).all()
        else:
            np.testing.assert_array_equal(forced["profile"][:, sl], own["profile"][:, sl])


def test_profile_dropout_makes_fields_unknown_in_training_only(ds_maddison):  # noqa: F811
    split = open_split(ds_maddison, "train", assemble=False, profile=True)
    blocks = split.blocks(64)
    src = [blocks[i] for i in range(len(blocks))]
    kw = dict(symmetry="none", profile=True, profile_dropout=0.3)
    train = WindowBuilder(split.feature_name, 9, 32, **kw).build(src, np.random.default_rng(0))
    unknown = profiles.encode(profiles.UNKNOWN_PROFILE)
    for name, sl in profiles.FIELD_SLICES.items():
        dropped = (train["profile"][:, sl] == unknown[sl]).all(axis=1).mean()
        if name == "handicap":
            continue
        if name in ("source", "time_control"):  # unknown in these fixture games anyway
            assert dropped == 1.0
        else:
            assert 0.25 < dropped < 0.35, (name, dropped)
    evaluation = WindowBuilder(split.feature_name, 9, 32, symmetry="none", shuffle=False, profile=True,
                               profile_dropout=0.3).build(src, None)
    assert (evaluation["profile"][:, profiles.FIELD_SLICES["date"]][:, -1] == 0).all()  # no dropout
    with pytest.raises(ValueError, match="probability"):
        WindowBuilder(split.feature_name, 9, 32, profile=True, profile_dropout=1.5)
    plain = open_split(ds_maddison, "train", assemble=False).blocks(64)
    with pytest.raises(ValueError, match="open the split with profile=True"):
        WindowBuilder(split.feature_name, 9, 32, profile=True).build([plain[0]], np.random.default_rng(0))


@pytest.mark.slow
def test_train_eval_and_load_a_profiled_net(ds_maddison, tmp_path):  # noqa: F811
    from kifunet.eval.evaluate import Predictor, evaluate
    from kifunet.train.nets import load_net

    wd = tmp_path / "run"
    rc = cli_main(["train", "--config", TINY, "--workdir", str(wd), f"--config.dataset={ds_maddison}",
                   "--config.model.profile_embedding=8", "--config.train_positions=320"])
    assert rc == 0
    assert json.loads((wd / "config.json").read_text())["model"]["profile_embedding"] == 8
    net = load_net(str(wd))
    assert net.model.profile_embedding is not None
    out = net.model.profile_embedding.out
    assert np.abs(np.asarray(out.kernel[...])).max() > 0  # trained away from its zero start
    pred = Predictor(net.model, net.feature_set)
    assert pred.reads_profile
    with open_split(ds_maddison, "test") as r:
        own = evaluate(pred, r, batch_size=64, limit=128, progress=False)
    with open_split(ds_maddison, "test") as r:
        forced = evaluate(pred, r, batch_size=64, limit=128, progress=False, profile="year=1990,rank=3k")
    assert own["settings"]["profile"] == "" and forced["settings"]["profile"] == "rank=3k,date=1990-07-01"
    assert own["results"]["single"]["nll_sum"] != forced["results"]["single"]["nll_sum"]
    with open_split(ds_maddison, "test") as r, pytest.raises(ValueError, match="profile: unknown key 'yr'"):
        evaluate(pred, r, batch_size=64, limit=64, progress=False, profile="yr=1990")


def test_a_profile_for_a_net_without_one_is_refused(ds_maddison, tmp_path):  # noqa: F811
    from flax import nnx

    from kifunet import models
    from kifunet.eval.evaluate import Predictor, evaluate

    with open_split(ds_maddison, "test") as r:
        net = models.create("maddison_tiny", board_size=9, in_planes=r.num_planes, rngs=nnx.Rngs(0))
        pred = Predictor(net, r.feature_name)
        assert not pred.reads_profile
        with pytest.raises(ValueError, match="no profile input"):
            evaluate(pred, r, batch_size=64, limit=64, progress=False, profile="year=1990")
        res = evaluate(pred, r, batch_size=64, limit=64, progress=False)
        assert "profile" not in res["settings"]
