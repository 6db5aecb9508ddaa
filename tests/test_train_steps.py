"""The loss and the steps (train/steps.py) mapped over a mesh: the masked value loss by hand, policy-only steps
untouched by outcomes and ``value_weight``, the value learnt on a toy problem (and not without its loss term),
four devices = one with the known rows all on one device."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

from kifunet.models.forward import NetFacts, Outputs
from kifunet.train import parallel, steps
from model_helpers import _fast_compiles  # noqa: F401 (fixture: unoptimised compiles)
from test_train import _env

# a hand-made batch: rows 0-2 known (two wins of the mover's side... one loss), row 3 unknown, row 4 a draw,
# row 5 padding (weight 0) whose outcome must not count
VALUE = np.array([0.5, -0.2, 0.0, 0.9, 0.3, 0.7], np.float32)
OUTCOME = np.array([1, 1, -1, -128, 0, 1], np.int8)
WEIGHT = np.array([1, 1, 1, 1, 1, 0], np.float32)
# by hand: known rows 0, 1, 2, 4: (0.5-1)^2 + (-0.2-1)^2 + (0+1)^2 + (0.3-0)^2 = 0.25 + 1.44 + 1 + 0.09 = 2.78
HAND_MSE = 2.78 / 4
# decided rows 0, 1, 2 (row 4 a draw): signs agree on row 0 only (row 2's value 0 names no winner)
HAND_WINNER = 1 / 3
# the constant predictor: mean outcome (1 + 1 - 1 + 0) / 4 = 0.25; mean outcome^2 = 3 / 4; 0.75 - 0.0625
HAND_BASELINE = 0.75 - 0.25 ** 2


class TwoHeads(nnx.Module):
    """Testing only: the smallest two-headed net (``has_value``): a dense layer from the planes to the logits and
    another to the value's tanh; it compiles in a fraction of a conv net's time. ``value=False``: policy only."""

    def __init__(self, n: int = 9, planes: int = 10, seed: int = 0, value: bool = True):
        r = nnx.Rngs(seed)
        self.has_value = value
        self.policy = nnx.Linear(n * n * planes, n * n + 1, rngs=r)
        self.value_out = nnx.Linear(n * n * planes, 1, rngs=r) if value else None
        self.facts = NetFacts(board_size=n, in_planes=planes, has_value=value, has_pass=True, reads_rank=False,
                              reads_profile=False, resizable=False)

    def __call__(self, planes, rank=None, to_move=None, profile=None):
        x = jnp.asarray(planes).astype(jnp.float32).reshape(planes.shape[0], -1)
        if self.value_out is None:
            return Outputs(self.policy(x))
        return Outputs(self.policy(x), jnp.tanh(self.value_out(x)[:, 0]))


def _mapped(fn, mesh):
    """``fn(value, batch)`` per device, on sharded copies of host arrays."""
    mapped = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P()))
    return lambda v, b: mapped(parallel.shard_batch({"v": v}, mesh)["v"], parallel.shard_batch(b, mesh))


def test_value_loss_and_sums_are_the_masked_figures_by_hand():
    mesh = parallel.make_mesh(1)
    batch = {"outcome": OUTCOME, "weight": WEIGHT}
    loss = _mapped(lambda v, b: jax.lax.pmean(steps.value_loss(v, b), "data"), mesh)
    assert float(loss(VALUE, batch)) == pytest.approx(HAND_MSE, rel=1e-6)
    # no known row: zero (not NaN), and no gradient
    unknown = {"outcome": np.full(6, -128, np.int8), "weight": WEIGHT}
    assert float(loss(VALUE, unknown)) == 0.0
    sums = jax.device_get(_mapped(lambda v, b: jax.lax.psum(steps.value_sums(v, b), "data"), mesh)(VALUE, batch))
    assert {k: float(v) for k, v in sums.items()} == pytest.approx(
        {"value_sq_sum": 2.78, "value_known": 4, "winner_decided": 3, "winner_correct": 1, "outcome_sum": 1})
    m = steps.value_metrics(sums)
    assert m["value_mse"] == pytest.approx(HAND_MSE, rel=1e-6) and m["winner_acc"] == pytest.approx(HAND_WINNER)
    assert m["value_baseline_mse"] == pytest.approx(HAND_BASELINE)


def _toy_batch(rng, b: int, n: int = 9, planes: int = 10) -> dict:
    """Random planes, random played moves, and a value target the planes decide: the side whose newest stones
    plane (qiqiao's planes 3 = black, 7 = white) is denser wins; black is to move (plane 8 all 0)."""
    dens = rng.uniform(0.1, 0.5, (b, 2))
    x = np.zeros((b, n, n, planes), np.uint8)
    for j, c in enumerate((3, 7)):
        x[..., c] = rng.random((b, n, n)) < dens[:, j, None, None]
    outcome = np.where(dens[:, 0] > dens[:, 1], 1, -1).astype(np.int8)
    outcome[::7] = -128  # some unknown results
    return {"planes": x, "target": rng.integers(0, n * n + 1, b).astype(np.int32), "to_move": np.ones(b, np.int32),
            "rank": np.zeros(b, np.int32), "outcome": outcome, "weight": np.ones(b, np.float32)}


def _state(model_def, tx, mesh):
    return parallel.replicate({"params": model_def.params, "extra": model_def.extra,
                               "opt_state": tx.init(model_def.params), "step": jnp.zeros((), jnp.int32)}, mesh)


def test_the_step_descends_policy_plus_weighted_masked_value_mse():
    """One SGD step at lr 1 moves the parameters by minus the gradient of the hand-written loss: mean cross-entropy
    over the rows with weight + value_weight x the MSE over the known rows of :data:`OUTCOME` (padding and the
    unknown row out)."""
    model = TwoHeads()
    md = steps.ModelDef(model)
    assert md.has_value
    mesh = parallel.make_mesh(1)
    tx = optax.sgd(1.0)
    batch = _toy_batch(np.random.default_rng(1), 6)
    batch.update(outcome=OUTCOME, weight=WEIGHT)
    graph, _, extra = nnx.split(model, nnx.Param, ...)

    def hand_loss(params):
        out = nnx.merge(graph, params, extra)(jnp.asarray(batch["planes"]), None, None)
        logits, value = out.logits, out.value
        ce = jax.nn.logsumexp(logits, -1) - logits[jnp.arange(6), batch["target"]]
        known = np.array([1, 1, 1, 0, 1, 0], np.float32)
        z = np.where(OUTCOME == -128, 0, OUTCOME).astype(np.float32)
        return jnp.sum(ce * WEIGHT) / WEIGHT.sum() + 0.5 * jnp.sum(known * (value - z) ** 2) / known.sum()

    want = jax.tree.map(lambda p, g: p - g, md.params, jax.jit(jax.grad(hand_loss))(md.params))
    step = parallel.data_parallel(steps.train_step(md, tx, lambda s: 1.0, value_weight=0.5), mesh)
    new, metrics = step(_state(md, tx, mesh), parallel.shard_batch(batch, mesh))
    got, want = jax.tree.leaves(jax.device_get(new["params"])), jax.tree.leaves(want)
    assert len(got) == len(want) and all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(got, want))
    assert float(metrics["value_known"]) == 4 and float(metrics["winner_decided"]) == 3


def test_a_policy_only_step_ignores_outcomes_and_value_weight():
    """A net without a value head: the same parameters and metrics to the bit with or without an ``outcome``
    column and whatever ``value_weight``; its metrics have no value sums."""
    md = steps.ModelDef(TwoHeads(value=False))
    assert not md.has_value
    mesh = parallel.make_mesh(1)
    tx = optax.sgd(0.1, momentum=0.9)
    batch = _toy_batch(np.random.default_rng(2), 16)
    plain = {k: v for k, v in batch.items() if k != "outcome"}
    outs = []
    for b, w in ((batch, 0.01), (plain, 7.0)):
        step = parallel.data_parallel(steps.windowed(steps.train_step(md, tx, lambda s: 0.1, value_weight=w)),
                                      mesh, carry=True)
        state, window = _state(md, tx, mesh), parallel.empty_window(mesh)
        for _ in range(2):
            state, window = step(state, parallel.shard_batch(b, mesh), window)
        outs.append(jax.device_get((state, window)))
    (s1, w1), (s2, w2) = outs
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(s1), jax.tree.leaves(s2)))
    assert w1.keys() == w2.keys() and not set(steps.VALUE_SUM_METRICS) & set(w1)
    assert all(np.array_equal(w1[k], w2[k]) for k in w1)
    assert steps.value_metrics(w1) == {}


def _learn(value_weight: float, n_steps: int) -> tuple[dict, list, list]:
    """``n_steps`` Adam steps of :class:`TwoHeads` on fresh toy batches: (held-out value metrics, the value head's
    parameters before, after)."""
    md = steps.ModelDef(TwoHeads())
    mesh = parallel.make_mesh(1)
    tx = optax.adam(1e-2)
    step = parallel.data_parallel(steps.train_step(md, tx, lambda s: 1e-2, value_weight=value_weight), mesh)
    evaluate = parallel.data_parallel(steps.eval_step(md), mesh)
    rng = np.random.default_rng(0)
    test = parallel.shard_batch(_toy_batch(np.random.default_rng(99), 512), mesh)
    state = _state(md, tx, mesh)
    def head(st):  # the value head's own parameters
        leaves = jax.tree_util.tree_flatten_with_path(jax.device_get(st["params"]))[0]
        return [np.asarray(v) for p, v in leaves if "['value_out']" in jax.tree_util.keystr(p)]

    before = head(state)
    for _ in range(n_steps):
        state, _ = step(state, parallel.shard_batch(_toy_batch(rng, 64), mesh))
    return steps.value_metrics(jax.device_get(evaluate(state, test))), before, head(state)


@pytest.mark.slow
def test_the_step_learns_the_value_on_a_toy_problem():
    """The denser colour wins (:func:`_toy_batch`): 100 steps of batch 64 bring the held-out value MSE well below
    the constant predictor's (about 1: the classes are balanced) and the winner right on most rows; with
    ``value_weight`` 0 the value head's own parameters never move (only the policy trains)."""
    got, before, after = _learn(1.0, 100)
    print(got)
    assert got["value_known"] == 438 and got["value_baseline_mse"] > 0.99  # 512 rows less every 7th
    assert got["value_mse"] < 0.6 * got["value_baseline_mse"] and got["winner_acc"] > 0.75  # measured 0.39, 0.86
    assert before and not all(np.array_equal(a, b) for a, b in zip(before, after))
    _, before, after = _learn(0.0, 3)
    assert before and all(np.array_equal(a, b) for a, b in zip(before, after))


# the global masked mean whatever the shards: every known row on the first of four devices
FOUR_DEVICES = textwrap.dedent("""
    import json, sys
    import jax, numpy as np, optax
    from kifunet.train import parallel, steps
    sys.path.insert(0, sys.argv[1])
    from test_train_steps import TwoHeads, _toy_batch, _state
    assert len(jax.devices()) == 4
    batch = _toy_batch(np.random.default_rng(3), 16)
    batch["outcome"][4:] = -128  # the first device's 4 rows only are known
    batch["outcome"][:4] = [1, -1, 1, 0]
    out = {}
    for n in (1, 4):
        md = steps.ModelDef(TwoHeads())
        mesh = parallel.make_mesh(n)
        tx = optax.sgd(1.0)
        step = parallel.data_parallel(steps.train_step(md, tx, lambda s: 1.0, value_weight=10.0), mesh)
        new, m = step(_state(md, tx, mesh), parallel.shard_batch(batch, mesh))
        out[n] = [np.asarray(x) for x in jax.tree.leaves(jax.device_get(new["params"]))]
        moved = max(float(np.max(np.abs(a - b))) for a, b in zip(out[n], jax.tree.leaves(md.params)))
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(out[1], out[4]))
    print("RESULT " + json.dumps({"diff": diff, "moved": moved}))
""")


@pytest.mark.slow
def test_four_devices_take_the_global_masked_mean(tmp_path):
    """The value MSE's denominator is the global batch's known rows (psum), not each device's: with all 4 known
    rows on one device of four, the step equals one device's to float rounding (a per-device mean would give that
    device's rows 4x their weight)."""
    script = tmp_path / "four.py"
    script.write_text(FOUR_DEVICES)
    from test_train import REPO

    p = subprocess.run([sys.executable, str(script), str(REPO / "tests")], capture_output=True, text=True,
                       env=_env(XLA_FLAGS="--xla_force_host_platform_device_count=4"), timeout=300)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stdout[-2000:] + p.stderr[-2000:]
    res = json.loads(line[0][len("RESULT "):])
    print(res)
    assert res["moved"] > 1e-3 and res["diff"] < 1e-6


def test_logit_abs_max_leaves_out_padding_rows_and_the_fixed_pass_logit():
    from kifunet.models.base import NO_PASS_LOGIT

    logits = jnp.array([[1.0, -3.0, NO_PASS_LOGIT], [2.5, 0.5, NO_PASS_LOGIT], [99.0, 0.0, 7.0]])
    weight = jnp.array([1.0, 1.0, 0.0])  # row 2 is padding
    assert float(steps.logit_abs_max(logits, weight)) == 3.0
    assert float(steps.logit_abs_max(logits, jnp.ones(3))) == 99.0
    assert np.isnan(float(steps.logit_abs_max(logits.at[1, 1].set(jnp.nan), weight)))


def test_the_window_keeps_the_largest_gradient_norm_and_logit_beside_the_last():
    """A spike in the middle of a window (one batch of planes x30) shows in ``grad_norm_max`` and ``logit_abs_max``
    although the last step is calm: the maxima are those of the steps run one by one, the last values the last
    step's."""
    md = steps.ModelDef(TwoHeads(value=False))
    mesh = parallel.make_mesh(1)
    tx = optax.sgd(0.01)
    rng = np.random.default_rng(5)
    batches = []
    for scale in (1.0, 30.0, 1.0):
        b = _toy_batch(rng, 16)
        b["planes"] = b["planes"].astype(np.float32) * scale
        batches.append(parallel.shard_batch(b, mesh))
    single = parallel.data_parallel(steps.train_step(md, tx, lambda s: 0.01), mesh)
    state, each = _state(md, tx, mesh), []
    for b in batches:
        state, m = single(state, b)
        each.append(jax.device_get(m))
    win = parallel.data_parallel(steps.windowed(steps.train_step(md, tx, lambda s: 0.01)), mesh, carry=True)
    state, window = _state(md, tx, mesh), parallel.empty_window(mesh)
    for b in batches:
        state, window = win(state, b, window)
    w = jax.device_get(window)
    for k in steps.MAXED_METRICS:
        assert float(w[k]) == float(each[-1][k])
        assert float(w[f"{k}_max"]) == max(float(m[k]) for m in each) == float(each[1][k])
        assert float(w[f"{k}_max"]) > 5 * float(w[k])  # the spike, invisible in the last value
    assert set(steps.MAX_METRICS) <= set(steps.zeros_window())


@pytest.mark.parametrize("precision", ["default", "high", "highest"])
def test_matmul_precision_reaches_every_convolution_of_both_passes(precision):
    """``matmul_precision`` sets the precision of every convolution the step lowers, forward and backward (on a GPU
    'default' is TF32, on a TPU one bfloat16 pass: the CPU only shows the request)."""
    from kifunet import models

    model = models.create("maddison_tiny", board_size=9, in_planes=36, rngs=nnx.Rngs(0))
    md, tx, mesh = steps.ModelDef(model), optax.sgd(0.1), parallel.make_mesh(1)
    b = 4
    batch = parallel.shard_batch({"planes": np.zeros((b, 9, 9, 36), np.uint8), "target": np.zeros(b, np.int32),
                                  "to_move": np.ones(b, np.int32), "rank": np.zeros(b, np.int32),
                                  "weight": np.ones(b, np.float32)}, mesh)
    fn = parallel.data_parallel(steps.train_step(md, tx, lambda s: 0.1, matmul_precision=precision), mesh)
    text = fn.lower(_state(md, tx, mesh), batch).as_text()
    convs = [ln for ln in text.splitlines() if "stablehlo.convolution" in ln]
    assert len(convs) == 8  # 3 convs forward; backward: 3 input gradients but the first layer's, 3 kernel gradients
    want = f"#stablehlo<precision {precision.upper()}>, #stablehlo<precision {precision.upper()}>"
    assert all(want in ln for ln in convs), convs[0]
    with pytest.raises(ValueError, match="matmul_precision must be one of"):
        steps.train_step(md, tx, lambda s: 0.1, matmul_precision="tf32")
