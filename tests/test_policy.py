"""The play-side policy: positions built like the dataset's, rank handling, and loading a training checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.data_prep.planes import features, replay
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, WHITE, GameRecord
from kifunet.play import policy as policy_mod
from kifunet.play.policy import Policy, fresh_policy, position_record
from model_helpers import _fast_compiles  # noqa: F401 -- autouse: unoptimised XLA compiles in this module
from model_helpers import rngs as fast_rngs


def random_game(n: int, moves: int, seed: int, pass_rate: float = 0.05) -> list[tuple[int, int]]:
    """A legal random game (captures, ko and passes happen), colours alternating from black."""
    rng = np.random.default_rng(seed)
    b = Board(n)
    out, c = [], BLACK
    while len(out) < moves:
        legal = np.nonzero(b.legal_moves(c)[:-1])[0]
        p = n * n if (rng.random() < pass_rate or len(legal) == 0) else int(rng.choice(legal))
        if p != n * n:
            b.play(p, c)
        out.append((c, p))
        c = 3 - c
    return out


def full_planes(n, moves, colour, fs):
    rec = GameRecord.from_moves(n, list(moves) + [(colour, n * n)])
    return replay.encode_game(rec, fs).planes[-1]


@pytest.mark.parametrize("fs_name", ["maddison", "alphago", "gonn", "agz+nogo_liberties"])
def test_history_window_gives_the_planes_of_the_full_replay(fs_name):
    fs = features.get(fs_name)
    n = 9
    moves = random_game(n, 140, seed=7)
    checked = 0
    for t in range(0, len(moves) + 1, 5):
        colour = moves[t][0] if t < len(moves) else 3 - moves[-1][0]
        want = full_planes(n, moves[:t], colour, fs)
        got = replay.encode_game(position_record(n, moves[:t], colour, window=8), fs).planes[-1]
        np.testing.assert_array_equal(got, want, err_msg=f"{fs_name} after {t} moves")
        checked += t > 8
    assert checked > 20  # most positions really were folded into setup stones


def test_a_window_shorter_than_the_history_planes_is_wrong():
    # negative control: AGZ's 8-position history needs 7 earlier positions; 2 moves are not enough
    fs = features.get("agz")
    n = 9
    moves = random_game(n, 60, seed=3, pass_rate=0.0)
    colour = BLACK
    short = replay.encode_game(position_record(n, moves, colour, window=2), fs).planes[-1]
    assert not np.array_equal(short, full_planes(n, moves, colour, fs))
    with pytest.raises(ValueError, match="at least 8"):
        Policy(fresh_policy("maddison_tiny", 9).model, "maddison", 9, window=4)


def test_probabilities_are_the_softmax_of_the_model_on_the_dataset_planes():
    pol = fresh_policy("maddison_tiny", 9, seed=1, rank="5d")
    moves = random_game(9, 30, seed=11)
    colour = WHITE if moves[-1][0] == BLACK else BLACK
    p = pol.probabilities(moves, colour)
    assert p.shape == (82,) and abs(p.sum() - 1) < 1e-9 and (p >= 0).all()
    assert p[81] == 0.0 and pol.has_pass is False  # Maddison's net has no pass output

    # the same planes by the dataset path: full replay, rank column = 5d (4), assembled
    fs = features.get("maddison")
    rec = GameRecord.from_moves(9, moves + [(colour, 81)])
    rec.info.black_rank = rec.info.white_rank = 4
    enc = replay.encode_game(rec, fs)
    planes = fs.assemble(enc.planes[-1:], {k: v[-1:] for k, v in enc.columns().items()})
    np.testing.assert_array_equal(pol.planes(moves, colour), planes[0])
    rank_planes = planes[0, 0, 0, 27:36]
    assert rank_planes.tolist() == [0, 0, 0, 0, 1, 0, 0, 0, 0]  # one-hot 5d
    logits = np.asarray(pol.model(planes.astype(np.float32), rank=np.array([4]), to_move=np.array([colour])).logits)[0]
    z = np.exp(logits - logits.max())
    np.testing.assert_allclose(p, z / z.sum(), rtol=1e-5, atol=1e-7)


def test_a_record_and_its_moves_give_the_same_probabilities():
    pol = fresh_policy("alphago_tiny", 9, seed=2)
    moves = random_game(9, 25, seed=5)
    rec = GameRecord.from_moves(9, moves)
    np.testing.assert_array_equal(pol.probabilities(rec, BLACK), pol.probabilities(moves, BLACK))


def test_rank_reaches_rank_planes_and_rank_embeddings():
    moves = random_game(9, 20, seed=2)
    mad = fresh_policy("maddison_tiny", 9, seed=0)
    p1, p9 = mad.with_rank("1d").probabilities(moves, BLACK), mad.with_rank("9d").probabilities(moves, BLACK)
    assert not np.allclose(p1, p9)
    emb = fresh_policy("maddison_tiny", 9, seed=0, feature_set="alphago", rank_embedding=True)  # no rank planes
    e1, e9 = emb.with_rank("1d").probabilities(moves, BLACK), emb.with_rank("9d").probabilities(moves, BLACK)
    assert not np.allclose(e1, e9)
    plain = fresh_policy("alphago_tiny", 9, seed=0)  # no rank input at all: rank changes nothing
    np.testing.assert_array_equal(plain.with_rank("1d").probabilities(moves, BLACK),
                                  plain.with_rank("9d").probabilities(moves, BLACK))


def test_rank_values_and_feature_set_inference():
    assert policy_mod.rank_value("9d") == 8 and policy_mod.rank_value("1d") == 0 and policy_mod.rank_value(None) == -128
    assert policy_mod.rank_value("3k") == -3
    with pytest.raises(ValueError, match="not a rank"):
        policy_mod.rank_value("grandmaster")
    assert policy_mod.feature_set_for(36) == "maddison" and policy_mod.feature_set_for(48) == "alphago"
    assert policy_mod.feature_set_for(17) == "agz" and policy_mod.feature_set_for(26) == "gonn"
    assert policy_mod.feature_set_for(21) == "agz+nogo_liberties"
    with pytest.raises(KeyError, match="--features"):
        policy_mod.feature_set_for(45)  # Cazenave's planes: no named set
    with pytest.raises(ValueError, match="planes"):
        Policy(fresh_policy("maddison_tiny", 9).model, "gonn", 9)


def _save_run(workdir, net, step: int, config: dict, meta_extra: dict | None = None):
    from flax import nnx

    from kifunet.train import checkpointing

    _, params, extra = nnx.split(net, nnx.Param, ...)
    state = {"params": params, "extra": extra, "opt_state": {}, "step": np.int32(step)}
    ck = checkpointing.Checkpointer(str(workdir / "checkpoints"), async_save=False)
    ck.save(step, state, {"position": step}, {"step": step, "config": config, **(meta_extra or {})})
    ck.close()
    (workdir / "config.json").write_text(json.dumps(config))


def test_load_policy_restores_parameters_and_batchnorm_statistics(tmp_path):
    import jax.numpy as jnp
    from flax import nnx

    from kifunet import models

    net = models.create("agz_tiny", board_size=9, rngs=nnx.Rngs(4))
    net.train()  # move the BatchNorm running statistics away from their initial values
    x = jnp.asarray(np.random.default_rng(0).integers(0, 2, (8, 9, 9, 17)), jnp.float32)
    for _ in range(3):
        net(x)
    # the dataset manifest is where the board size and feature set are recorded
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "manifest.json").write_text(json.dumps({"board_size": 9, "features": {"name": "agz", "num_planes": 17}}))
    run = tmp_path / "run"
    run.mkdir()
    config = {"dataset": str(ds), "model": {"name": "agz_tiny", "dtype": "float32", "rank_embedding": False}}
    _save_run(run, net, 7, config)
    net.eval()
    pol = policy_mod.load_policy(run)
    ref = Policy(net, "agz", 9)
    moves = random_game(9, 20, seed=1)
    np.testing.assert_allclose(pol.probabilities(moves, BLACK), ref.probabilities(moves, BLACK), rtol=1e-6, atol=1e-9)
    fresh = Policy(models.create("agz_tiny", board_size=9, rngs=nnx.Rngs(4)), "agz", 9)
    assert not np.allclose(fresh.probabilities(moves, BLACK), ref.probabilities(moves, BLACK))  # stats mattered
    assert "agz_tiny" in pol.description and "step 7" in pol.description

    # a later step is the default; --step picks an older one
    net2 = models.create("agz_tiny", board_size=9, rngs=nnx.Rngs(9))
    _save_run(run, net2, 12, config)
    assert "step 12" in policy_mod.load_policy(run).description
    old = policy_mod.load_policy(run, step=7)
    np.testing.assert_allclose(old.probabilities(moves, BLACK), ref.probabilities(moves, BLACK), rtol=1e-6, atol=1e-9)
    with pytest.raises(FileNotFoundError, match="step 99"):
        policy_mod.load_policy(run, step=99)


def test_load_policy_refuses_a_checkpoint_of_another_shape(tmp_path):
    from flax import nnx

    from kifunet import models

    run = tmp_path / "run"
    run.mkdir()
    net = models.create("maddison_tiny", board_size=9, rngs=nnx.Rngs(0))
    _save_run(run, net, 1, {"model": {"name": "maddison_tiny"}}, {"board_size": 9, "feature_set": "maddison"})
    assert policy_mod.load_policy(run).board_size == 9
    with pytest.raises(ValueError, match="does not fit"):
        policy_mod.load_policy(run, feature_set="alphago")  # 48 planes: the first conv has the wrong shape


@pytest.mark.slow
def test_a_real_training_run_loads_and_plays(tmp_path):
    """`kifunet build` + `kifunet train` (tiny config) -> load_policy reproduces the trainer's final evaluation,
    and `kifunet gtp --checkpoint` plays from it."""
    import subprocess
    import sys
    from pathlib import Path

    from kifunet.data_prep.datasets.reader import Reader

    samples = Path(__file__).resolve().parents[1] / "samples" / "gnugo"
    if not samples.is_dir():
        pytest.skip("samples/gnugo is absent")
    cli = [sys.executable, "-m", "kifunet.cli"]
    ds, run = tmp_path / "ds", tmp_path / "run"
    b = subprocess.run(cli + ["build", str(samples), "--out", str(ds), "--workers", "1", "--no-progress",
                              "--val-fraction", "0.2"], capture_output=True, text=True, timeout=600)
    assert b.returncode == 0, b.stdout + b.stderr
    t = subprocess.run(cli + ["train", "--config", str(Path(__file__).resolve().parents[1] / "train/configs/tiny.py"),
                              "--workdir", str(run), f"--config.dataset={ds}", "--config.eval_split=val"],
                       capture_output=True, text=True, timeout=900)
    assert t.returncode == 0, t.stdout[-3000:] + t.stderr[-3000:]
    final = json.loads((run / "metrics_eval.jsonl").read_text().strip().splitlines()[-1])

    pol = policy_mod.load_policy(run)
    assert pol.board_size == 19 and pol.fs.name == "maddison" and f"step {final['step']}" in pol.description
    rows = Reader(str(ds), "val").read_range(0, int(final["eval_positions"]))
    x = rows["planes"].astype(np.float32)
    logits = np.asarray(pol.net(x, rows["player_rank"].astype(np.int32), rows["to_move"].astype(np.int32)).logits,
                        dtype=np.float64)
    m = logits.max(1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(1)) + m[:, 0]
    nats = lse - logits[np.arange(len(x)), rows["target"].astype(int)]
    assert abs(nats.mean() - final["nats"]) < 1e-4
    assert abs((logits.argmax(1) == rows["target"]).mean() - final["top1"]) < 1e-9

    g = subprocess.run(cli + ["gtp", "--checkpoint", str(run), "--rank", "9d"], input="genmove b\nquit\n",
                       capture_output=True, text=True, timeout=300)
    assert g.returncode == 0, g.stderr[-2000:]
    first = g.stdout.split("\n\n")[0]
    assert first.startswith("= ") and first[2:] != "pass"


# --- symmetries, board sizes: the API the GTP engine uses (play/policy.py's table) ---------------------------


def test_symmetries_average_the_first_k_symmetric_passes():
    """``symmetries=8`` is the mean of the 8 passes, each on the transformed position and mapped back (computed
    here one at a time with data_prep.symmetries); values too; k=1 is the plain pass; pass's entry is averaged."""
    from kifunet.data_prep import symmetries as sym

    from kifunet import models

    # a learned pass and a value head; RBG keys and unoptimised compiles (tests/model_helpers.py) keep it fast
    pol = Policy(models.create("agz_tiny", board_size=9, value_head=True, rngs=fast_rngs(3)), "agz", 9)
    moves = random_game(9, 23, seed=4)
    colour = 3 - moves[-1][0]
    x = pol.planes(moves, colour)
    out = pol.run_batch(np.stack([sym.apply_planes(x, s) for s in range(8)]), colour)
    logits, values = out.logits, out.value
    probs = [sym.apply_policy(policy_mod.softmax(logits[s]), int(sym.INVERSE[s]), 9) for s in range(8)]
    p8, v8 = pol.evaluate(moves, colour, symmetries=8)
    np.testing.assert_allclose(p8, np.mean(probs, axis=0), atol=1e-6)
    assert abs(v8 - np.mean(values)) < 1e-6 and abs(p8.sum() - 1) < 1e-9
    np.testing.assert_allclose(pol.probabilities(moves, colour, symmetries=3), np.mean(probs[:3], axis=0), atol=1e-6)
    np.testing.assert_allclose(pol.probabilities(moves, colour, symmetries=1), pol.probabilities(moves, colour),
                               atol=1e-12)
    assert np.abs(p8 - pol.probabilities(moves, colour)).max() > 1e-3  # the symmetric passes differ (random net)
    assert abs(p8[81] - np.mean([p[81] for p in probs])) < 1e-9
    for bad in (0, 9, 2.5, True):
        with pytest.raises(ValueError, match="1 to 8"):
            pol.probabilities(moves, colour, symmetries=bad)


def test_a_fully_convolutional_19x19_net_plays_9x9_and_13x13():
    """The shipped default net (trained on 19x19, fully convolutional) resized: a distribution at 9x9 and 13x13,
    on the same weights; its pass is still -1e9 and moves follow the position."""
    from conftest import REPO

    pol = policy_mod.load_policy(REPO / "pretrained" / "kgs_cpu_default")
    assert pol.trained_size == 19 and pol.size_problem(19) is None
    for n in (9, 13):
        assert pol.size_problem(n) is None
        small = pol.resized(n)
        assert small.board_size == n and small.trained_size == 19 and small.description == pol.description
        moves = random_game(n, 12, seed=n, pass_rate=0.0)
        p = small.probabilities(moves, BLACK)
        assert p.shape == (n * n + 1,) and abs(p.sum() - 1) < 1e-9 and (p >= 0).all() and p[-1] == 0.0
        occupied = [pt for _, pt in moves]
        assert p[occupied].sum() < 0.05  # a trained net does not put its mass on stones
        assert small.probabilities(moves, BLACK, symmetries=8).shape == (n * n + 1,)
    assert pol.resized(19) is pol
    assert "board sizes are 2 to 25" in pol.size_problem(26)


def test_nets_with_weights_tied_to_the_board_are_refused_with_a_reason():
    from kifunet import models

    mad = Policy(models.create("maddison_tiny", board_size=19, rngs=fast_rngs()), "maddison")  # a bias per point
    why = mad.size_problem(9)
    assert why and "trained on 19x19 and cannot play 9x9" in why and "[19, 19," in why, why
    with pytest.raises(ValueError, match="cannot play 13x13"):
        mad.resized(13)
    qq = Policy(models.create("qiqiao_tiny", rngs=fast_rngs()), "qiqiao")  # dense heads over the board
    why = qq.size_problem(19)
    assert why and "trained on 9x9 and cannot play 19x19" in why, why
    assert qq.size_problem(9) is None
