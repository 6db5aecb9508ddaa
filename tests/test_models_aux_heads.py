"""The ownership and score heads (models/aux_heads.py): exact sizes, off by default, their masked losses by hand,
the step training them, and the training windows turning the ownership with the planes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest
from flax import nnx

from kifunet import models
from kifunet.data_prep import symmetries as sym
from kifunet.train import parallel, steps
from kifunet.train.windows import WindowBuilder
from model_helpers import _fast_compiles  # noqa: F401 (fixture: unoptimised compiles)
from model_helpers import rngs


def _score_params(c: int) -> int:
    """1x1 conv C->32 (no bias) + BN scale and offset + dense 64->64 + dense 64->1 (the pooled vector: 2 x 32)."""
    return 32 * c + 2 * 32 + (64 * 64 + 64) + (64 + 1)


@pytest.mark.slow
@pytest.mark.parametrize("name,planes,c", [("agz_tiny", 17, 8), ("gonn_tiny", 26, 8), ("garb5", 21, 32),
                                           ("resnet18", 17, 39)])
def test_the_heads_add_exactly_their_layers_and_leave_the_rest_as_it_was(name, planes, c):
    base = models.create(name, board_size=9, in_planes=planes, rngs=rngs(0))
    both = models.create(name, board_size=9, in_planes=planes, rngs=rngs(0), ownership_head=True, score_head=True)
    own = models.create(name, board_size=9, in_planes=planes, rngs=rngs(0), ownership_head=True)
    assert models.count_params(own) - models.count_params(base) == c + 1
    assert models.count_params(both) - models.count_params(base) == c + 1 + _score_params(c)
    assert both.facts.has_ownership and both.facts.has_score and not base.facts.has_ownership
    # built last: every other weight is drawn as without them
    a, b = nnx.state(base, nnx.Param), nnx.state(both, nnx.Param)
    flat_a = dict(nnx.to_flat_state(a))
    for path, v in nnx.to_flat_state(b):
        if path[0] in ("ownership_head", "score_head"):
            continue
        np.testing.assert_array_equal(np.asarray(v.get_value()), np.asarray(flat_a[path].get_value()), err_msg=str(path))
    x = jnp.asarray(np.random.default_rng(0).random((2, 9, 9, planes)) < 0.3, jnp.float32)
    out, out0 = both(x), base(x)
    assert out.ownership.shape == (2, 9, 9) and out.score.shape == (2,)
    assert float(jnp.max(jnp.abs(out.ownership))) <= 1.0
    assert out0.ownership is None and out0.score is None
    np.testing.assert_array_equal(np.asarray(out.logits), np.asarray(out0.logits))


def test_families_without_the_heads_refuse_them():
    with pytest.raises(TypeError):
        models.create("mao_tiny", board_size=9, in_planes=17, rngs=rngs(0), ownership_head=True)


# a hand-made batch of 4 rows on 2x2 boards: row 0 and 1 carry ownership, row 2 has none (source 0), row 3 is
# padding (weight 0); scores: rows 0, 2 known, row 1 NaN, row 3 padding
OWN_PRED = np.array([[[0.5, -0.5], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.9, 0.9], [0.9, 0.9]],
                     [[0.3, 0.3], [0.3, 0.3]]], np.float32)
OWN_TARGET = np.array([[[1, -1], [1, 0]], [[1, 1], [-1, -1]], [[0, 0], [0, 0]], [[1, 1], [1, 1]]], np.int8)
SOURCE = np.array([1, 2, 0, 2], np.int8)
SCORE_PRED = np.array([3.0, 0.0, -1.0, 9.0], np.float32)
SCORE = np.array([1.0, np.nan, 1.0, 5.0], np.float32)
WEIGHT = np.array([1, 1, 1, 0], np.float32)
# by hand: row 0 (0.25 + 0.25 + 0 + 0) / 4 = 0.125, row 1 (1 + 1 + 1 + 1) / 4 = 1: mean 0.5625
HAND_OWN = (0.125 + 1.0) / 2
# rows 0 and 2, board side 2: ((3 - 1) / 2)^2 = 1, ((-1 - 1) / 2)^2 = 1: mean 1
HAND_SCORE = 1.0


def test_the_losses_are_the_masked_figures_by_hand():
    mesh = parallel.make_mesh(1)
    batch = {"ownership": OWN_TARGET, "ownership_source": SOURCE, "score": SCORE, "weight": WEIGHT,
             "planes": np.zeros((4, 2, 2, 1), np.uint8)}

    def run(fn, pred):
        f = jax.jit(jax.shard_map(lambda p, b: jax.lax.pmean(fn(p, b), "data"), mesh=mesh,
                                  in_specs=(jax.sharding.PartitionSpec("data"), jax.sharding.PartitionSpec("data")),
                                  out_specs=jax.sharding.PartitionSpec()))
        return float(f(parallel.shard_batch({"p": pred}, mesh)["p"], parallel.shard_batch(batch, mesh)))

    assert run(steps.ownership_loss, OWN_PRED) == pytest.approx(HAND_OWN, rel=1e-6)
    assert run(steps.score_loss, SCORE_PRED) == pytest.approx(HAND_SCORE, rel=1e-6)
    batch["ownership_source"] = np.zeros(4, np.int8)  # nothing known: 0, not NaN
    batch["score"] = np.full(4, np.nan, np.float32)
    assert run(steps.ownership_loss, OWN_PRED) == 0.0 and run(steps.score_loss, SCORE_PRED) == 0.0


def _batch(n: int = 9, b: int = 8) -> dict:
    rng = np.random.default_rng(3)
    own = rng.choice(np.array([-1, 0, 1], np.int8), (b, n, n))
    return {"planes": (rng.random((b, n, n, 17)) < 0.3).astype(np.uint8),
            "target": rng.integers(0, n * n + 1, b).astype(np.int32), "to_move": np.ones(b, np.int32),
            "rank": np.zeros(b, np.int32), "outcome": np.full(b, -128, np.int8), "weight": np.ones(b, np.float32),
            "ownership": own, "ownership_source": np.array([1, 2] * (b // 2), np.int8),
            "score": rng.normal(0, 5, b).astype(np.float32)}


@pytest.mark.slow
@pytest.mark.parametrize("weights,moved", [((0.0, 0.0), set()), ((1.0, 0.0), {"ownership_head"}),
                                           ((0.0, 1.0), {"score_head"})])
def test_a_head_learns_only_with_its_weight(weights, moved):
    model = models.create("agz_tiny", board_size=9, in_planes=17, rngs=rngs(0), ownership_head=True, score_head=True)
    md = steps.ModelDef(model)
    mesh = parallel.make_mesh(1)
    tx = optax.sgd(0.1)
    state = parallel.replicate({"params": md.params, "extra": md.extra, "opt_state": tx.init(md.params),
                                "step": jnp.zeros((), jnp.int32)}, mesh)
    step = parallel.data_parallel(steps.train_step(md, tx, lambda s: 0.1, ownership_weight=weights[0],
                                                   score_weight=weights[1]), mesh)
    new, _ = step(state, parallel.shard_batch(_batch(), mesh))
    before, after = dict(nnx.to_flat_state(md.params)), dict(nnx.to_flat_state(jax.device_get(new["params"])))
    changed = {p[0] for p in before if p[0] in ("ownership_head", "score_head")
               and not np.array_equal(np.asarray(before[p].get_value()), np.asarray(after[p].get_value()))}
    assert changed == moved


def test_a_weight_without_its_head_is_refused_in_one_line():
    from kifunet.train import train
    from kifunet.train.configs import default

    cfg = default.get_config()
    cfg.model.name = "agz_tiny"
    cfg.ownership_weight = 0.5
    with pytest.raises(ValueError, match="ownership_weight 0.5 needs a net with the head: a config that sets "
                                         "c.model.kwargs.ownership_head = True"):
        train.setup(cfg, board_size=9, in_planes=17, mesh=parallel.make_mesh(1))


def test_training_windows_turn_the_ownership_with_the_planes(tmp_path):
    from test_ownership_targets import _build, game

    d = tmp_path / "in"
    d.mkdir()
    for i, (res, marks) in enumerate([("W+0.5", "TB[aa:ci]TW[ga:ii]"), ("B+R", ""), ("W+0.5", "")]):
        (d / f"g{i}.sgf").write_bytes(game(res, marks, f"p{i}"))
    out = _build(d, tmp_path / "ds")
    from kifunet.train.data import open_blocks

    blocks = open_blocks(str(out), "train", targets=True)
    builder = WindowBuilder(blocks.feature_name, 9, 8, symmetry="example", history="none", shuffle=True)
    window = builder([blocks[i] for i in range(len(blocks))], np.random.default_rng(0))
    assert "ownership" in window and window["ownership"].shape[1:] == (9, 9)
    split = blocks.split
    plain = split.batch(window["index"])  # the same rows, no symmetry
    got = window["ownership"]
    want = sym.apply_planes_batch(plain["ownership"], window["symmetry"].astype(np.int64))
    np.testing.assert_array_equal(got, want)
    assert len(set(window["symmetry"].tolist())) > 1
    np.testing.assert_array_equal(window["ownership_source"], plain["ownership_source"])
    np.testing.assert_array_equal(window["score"], plain["score"])
    cfg = ml_collections.ConfigDict({"ownership_weight": 1.0})
    from kifunet.train import batches

    b = batches.window_batch(window, 0, 8)
    spec = batches.batch_spec(8, 9, 26, targets=batches.wants_targets(cfg))
    assert {k: (v.shape, v.dtype) for k, v in b.items()} == spec


def test_head_sums_by_hand():
    from kifunet.eval.head_metrics import HeadSums, merge

    h = HeadSums(ownership=True, score=True)
    outs = {"ownership": np.array([[[0.5, -0.2], [0.0, 0.9]], [[1, 1], [1, 1]]], np.float32),
            "score": np.array([4.0, -2.0], np.float32)}
    batch = {"ownership": np.array([[[1, -1], [1, 0]], [[-1, -1], [-1, -1]]], np.int8),
             "ownership_source": np.array([1, 0], np.int8), "score": np.array([1.5, np.nan], np.float32)}
    h.update(outs, batch)  # row 1 has no targets; row 0: 3 owned points, 2 right (a prediction of 0 is wrong)
    d = h.to_dict()
    assert d == {"ownership": {"rows": 1, "points": 3, "correct": 2, "accuracy": 2 / 3},
                 "score": {"rows": 1, "abs_sum": 2.5, "mae": 2.5}}
    assert merge([d, d])["ownership"]["accuracy"] == 2 / 3 and merge([d, d])["score"]["mae"] == 2.5


@pytest.mark.slow
def test_eval_reports_the_heads_on_counted_games_and_adds_up_over_parts(tmp_path):
    from test_ownership_targets import _build, game

    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval.evaluate import Predictor, evaluate, format_result, merge_results

    d = tmp_path / "in"
    d.mkdir()
    for i, (res, marks) in enumerate([("W+0.5", "TB[aa:ci]TW[ga:ii]"), ("B+R", ""), ("B+3.5", "")]):
        (d / f"g{i}.sgf").write_bytes(game(res, marks, f"q{i}"))
    out = _build(d, tmp_path / "ds")
    model = models.create("gonn_tiny", board_size=9, in_planes=26, rngs=rngs(0), ownership_head=True, score_head=True)
    pred = Predictor(model, "gonn")
    res = evaluate(pred, open_split(str(out), "train"), batch_size=16, progress=False)
    r = open_split(str(out), "train", targets=True)
    b = r.batch(np.arange(len(r)))
    o = pred.predict_outputs(b)
    rows = b["ownership_source"] > 0
    owned = b["ownership"][rows] != 0
    right = owned & (np.sign(o["ownership"][rows]) == b["ownership"][rows])
    assert res["heads"]["ownership"]["rows"] == int(rows.sum()) == 2 * 19  # two counted games, 19 moves not passes
    assert res["heads"]["ownership"]["accuracy"] == pytest.approx(right.sum() / owned.sum())
    known = np.isfinite(b["score"])
    assert res["heads"]["score"]["mae"] == pytest.approx(np.abs(o["score"][known] - b["score"][known]).mean(),
                                                         rel=1e-5)
    assert "ownership head:" in format_result(res) and "score head:" in format_result(res)
    parts = [evaluate(pred, open_split(str(out), "train"), batch_size=16, progress=False, start=a, limit=30)
             for a in (0, 30)]
    assert merge_results(parts)["heads"]["ownership"]["correct"] == res["heads"]["ownership"]["correct"]
    plain = Predictor(models.create("gonn_tiny", board_size=9, in_planes=26, rngs=rngs(0)), "gonn")
    assert "heads" not in evaluate(plain, open_split(str(out), "train"), batch_size=16, progress=False)



def _score_grads(name: str, planes: int) -> np.ndarray:
    """Every parameter's gradient of the summed score head output of ``name`` with both heads, in training mode,
    compiled under the current ``jax_disable_most_optimizations``, as one vector."""
    net = models.create(name, board_size=9, in_planes=planes, rngs=rngs(0), ownership_head=True, score_head=True)
    net.train()
    graph, params, rest = nnx.split(net, nnx.Param, ...)
    x = jnp.asarray(np.random.default_rng(0).random((8, 9, 9, planes)) < 0.3, jnp.float32)

    def score_sum(p):
        return jnp.sum(nnx.merge(graph, p, jax.tree.map(lambda a: a, rest))(x).score)

    grads = jax.jit(jax.grad(score_sum))(params)
    return np.concatenate([np.ravel(np.asarray(v.get_value())) for _, v in nnx.to_flat_state(grads)])


@pytest.mark.slow
@pytest.mark.parametrize("name,planes", [("agz_tiny", 17), ("gonn_tiny", 26), ("garb_tiny", 21)])
def test_the_score_heads_gradient_is_finite_and_the_same_under_both_compiles(name, planes):
    """The NaN of docs/training.md ("The score head's NaN"): unoptimised (this module's fast compiles) the CPU
    backend found no point equal to a channel's max, and JAX's max gradient divided by that count."""
    fast = _score_grads(name, planes)
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        optimised = _score_grads(name, planes)
    finally:
        jax.config.update("jax_disable_most_optimizations", True)
    assert np.isfinite(optimised).all()
    assert np.isfinite(fast).all(), f"{np.count_nonzero(~np.isfinite(fast))} non-finite gradient entries"
    np.testing.assert_allclose(fast, optimised, rtol=1e-4, atol=1e-4 * np.abs(optimised).max())


@pytest.mark.slow
def test_board_max_is_the_max_and_its_gradient_goes_to_the_first_point_holding_it():
    from kifunet.models.aux_heads import board_max

    x = jnp.asarray(np.random.default_rng(1).normal(size=(2, 3, 3, 4)), jnp.float32)
    np.testing.assert_array_equal(np.asarray(board_max(x)), np.asarray(jnp.max(x, axis=(1, 2))))
    w = jnp.arange(1.0, 9.0).reshape(2, 4)
    np.testing.assert_array_equal(np.asarray(jax.grad(lambda a: jnp.sum(board_max(a) * w))(x)),
                                  np.asarray(jax.grad(lambda a: jnp.sum(jnp.max(a, axis=(1, 2)) * w))(x)))
    ties = jnp.zeros((1, 3, 3, 1)).at[0, 1, 2, 0].set(1.0).at[0, 2, 0, 0].set(1.0)
    g = np.asarray(jax.grad(lambda a: jnp.sum(board_max(a)))(ties))[0, :, :, 0]
    assert g[1, 2] == 1.0 and g.sum() == 1.0  # JAX's rule would give 0.5 to each of the two
