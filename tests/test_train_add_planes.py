"""Constant planes added to a built dataset at load time (``input.add_planes``): Maddison's rank planes on the
``gonn`` set (issue 34's "rank planes against the rank vector" row), through the reader, the training pipeline,
a training run, its evaluation and the net's loading."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from kifunet.cli import main as cli_main
from kifunet.data_prep.datasets.dataset import open_split
from kifunet.data_prep.planes import features
from test_train_data import ds_gonn  # noqa: F401  (session fixture)

TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train", "configs", "tiny.py")


def test_with_constant_planes_and_its_inverse():
    assert features.with_constant_planes("gonn", "") == "gonn"
    assert features.with_constant_planes("gonn", "rank_planes") == "gonn+rank_planes"
    assert features.get("gonn+rank_planes").num_planes == 26 + 9
    assert features.get("gonn+rank_planes").num_stored == features.get("gonn").num_stored
    with pytest.raises(ValueError, match="stored planes .*nogo_liberties"):
        features.with_constant_planes("gonn", "nogo_liberties")
    assert features.constant_extension("gonn", "gonn") == ""
    assert features.constant_extension("gonn", "gonn+rank_planes") == "rank_planes"
    assert features.constant_extension("gonn", "gonn+nogo_liberties") is None  # stored planes the data lacks
    assert features.constant_extension("gonn", "maddison") is None
    assert features.constant_extension("agz", "agz_x+rank_planes") is None


def test_reader_with_rank_planes(ds_gonn):  # noqa: F811
    with open_split(ds_gonn, "train") as plain, open_split(ds_gonn, "train", add_planes="rank_planes") as ranked:
        assert (plain.num_planes, ranked.num_planes) == (26, 35)
        assert ranked.feature_name == "gonn+rank_planes" and ranked.describe()["num_planes"] == 35
        a, b = plain.batch(list(range(40))), ranked.batch(list(range(40)))
        np.testing.assert_array_equal(a["planes"], b["planes"][..., :26])
        rank = b["player_rank"]
        assert (rank >= 0).any()
        want = np.zeros((40, 9), np.uint8)
        ok = rank >= 0
        want[np.nonzero(ok)[0], np.minimum(rank[ok], 8)] = 1
        np.testing.assert_array_equal(b["planes"][:, 3, 5, 26:], want)
        assert (b["planes"][..., 26:] == b["planes"][:, :1, :1, 26:]).all()  # constant over the board
        clone = pickle.loads(pickle.dumps(ranked))  # grain workers get the added planes too
        assert clone.feature_name == "gonn+rank_planes" and clone.batch([0, 1])["planes"].shape[-1] == 35
    with pytest.raises(ValueError, match="stored planes"):
        open_split(ds_gonn, "train", add_planes="nogo_liberties")


@pytest.mark.slow
def test_train_and_eval_a_net_with_rank_planes_on_gonn(ds_gonn, tmp_path, capsys):  # noqa: F811
    from kifunet.train.nets import load_net

    wd = tmp_path / "run"
    rc = cli_main(["train", "--config", TINY, "--workdir", str(wd), f"--config.dataset={ds_gonn}",
                   "--config.input.add_planes=rank_planes", "--config.train_positions=64"])
    assert rc == 0
    net = load_net(str(wd))
    assert net.feature_set == "gonn+rank_planes" and int(net.model.in_planes) == 35
    assert json.loads((wd / "config.json").read_text())["input"]["add_planes"] == "rank_planes"
    out = tmp_path / "eval.json"
    capsys.readouterr()
    assert cli_main(["eval", "--checkpoint", str(wd), "--data", ds_gonn, "--split", "test", "--out", str(out),
                     "--no-progress"]) == 0
    from kifunet.data_prep import ranks
    from kifunet.data_prep.game import BLACK
    from kifunet.play.policy import load_policy

    pol = load_policy(wd, rank=ranks.parse_rank("5d"))  # what show and gtp play with
    planes = pol.planes([], BLACK)
    assert planes.shape[-1] == 35 and (planes[..., 26:] == np.eye(9, dtype=planes.dtype)[4]).all()
    assert pol.probabilities([], BLACK).shape == (82,)
    res = json.loads(out.read_text())
    assert res["run"]["feature_set"] == "gonn+rank_planes" and res["results"]["single"]["count"] > 0


def test_a_build_refuses_a_set_of_constant_planes_only(tmp_path, capsys):
    from test_build import write_corpus

    write_corpus(tmp_path / "in", 2, moves=10)
    rc = cli_main(["build", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--features", "rank_planes",
                   "--board-size", "9", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "only constant planes" in err and "--config.input.add_planes=rank_planes" in err, err
    assert not (tmp_path / "out" / "manifest.json").exists()
