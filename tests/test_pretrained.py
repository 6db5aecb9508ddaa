"""pretrained/kgs_cpu_small (the 60-minute KGS run kept in the repository) loads in a fresh clone and is trained."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "pretrained" / "kgs_cpu_small"


@pytest.fixture(scope="module")
def samples_ds(tmp_path_factory):
    from kifunet.cli import main

    out = tmp_path_factory.mktemp("pretrained") / "ds"
    assert main(["build", str(REPO / "samples" / "gnugo"), "--out", str(out), "--split", "train:rest",
                 "--workers", "0", "--no-progress"]) == 0
    return out


def test_the_pretrained_run_loads_without_its_dataset_and_predicts_moves(samples_ds):
    from kifunet.data_prep.reader import Reader
    from kifunet.eval.evaluate import evaluate
    from kifunet.eval.runs import load_run
    from kifunet.models import count_params

    pred = load_run(str(RUN))  # config.dataset (data/kgs_maddison) is not in a clone: the checkpoint says the shape
    assert (pred.feature_set, pred.board_size, pred.info["step"]) == ("maddison", 19, 19100)
    assert count_params(pred.model) == 103_954
    res = evaluate(pred, Reader(str(samples_ds), "train"), batch_size=256, limit=2048, progress=False)
    top1 = res["results"]["single"]["accuracy"]["1"]
    # GNU Go self-play is not KGS, but a trained net still finds many of its moves; an untrained one ~1/361
    assert top1 > 0.2, top1
    last = json.loads((RUN / "metrics_eval.jsonl").read_text().strip().splitlines()[-1])
    assert last["step"] == 19100 and last["eval_positions"] == 100_000 and abs(last["top1"] - 0.4121) < 1e-4


def test_the_pretrained_net_plays_legal_moves_for_play():
    from kifunet.eval.policy import load_policy

    pol = load_policy(RUN, rank="9d")
    p = pol.probabilities([(1, 3 * 19 + 15)], colour=2)  # white to move after black's Q16
    assert p.shape == (362,) and abs(float(p.sum()) - 1) < 1e-5
    # softmax over every point: the trained net has learned that the occupied point is never played
    assert p[3 * 19 + 15] < 1e-6 and np.argmax(p) != 3 * 19 + 15
