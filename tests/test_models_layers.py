"""Layer-level tests for kifunet.models.layers (small shapes, eager)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from kifunet.models import layers as L


from model_helpers import _fast_compiles, rngs  # noqa: F401  (autouse fixture)


def _rand(shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


# ----------------------------------------------------------------------------------------- convolutions

def test_symmetric_kernel_is_invariant_and_conv_is_equivariant():
    conv = L.Conv(3, 4, 5, symmetric=True, rngs=rngs(0))
    k = np.asarray(conv.effective_kernel())
    for t in (np.rot90(k, 1, axes=(0, 1)), np.swapaxes(k, 0, 1), k[::-1], k[:, ::-1]):
        np.testing.assert_allclose(t, k, atol=1e-6)
    # the stored kernel itself is not symmetric: the tying is done by the averaging
    raw = np.asarray(conv.kernel[...])
    assert np.abs(np.rot90(raw, 1, axes=(0, 1)) - raw).max() > 1e-3
    x = _rand((2, 7, 7, 3))
    y = np.asarray(conv(x))
    np.testing.assert_allclose(np.asarray(conv(jnp.rot90(x, 1, axes=(1, 2)))), np.rot90(y, 1, axes=(1, 2)), atol=1e-5)
    np.testing.assert_allclose(np.asarray(conv(jnp.swapaxes(x, 1, 2))), np.swapaxes(y, 1, 2), atol=1e-5)


def test_conv_matches_numpy_same_padding():
    conv = L.Conv(2, 3, 3, use_bias=True, rngs=rngs(1))
    conv.bias[...] = jnp.array([0.5, -1.0, 2.0])
    x = np.asarray(_rand((1, 5, 5, 2)))
    k = np.asarray(conv.kernel[...])
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((1, 5, 5, 3), np.float32)
    for r in range(5):
        for c in range(5):
            ref[0, r, c] = np.einsum("hwi,hwio->o", xp[0, r:r + 3, c:c + 3], k) + np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(np.asarray(conv(jnp.asarray(x))), ref, atol=1e-5)


def test_dilated_group_conv_receptive_fields():
    conv = L.DilatedGroupConv(1, 6, 3, dilated=2, rate=2, rngs=rngs(0))
    x = np.zeros((1, 9, 9, 1), np.float32)
    x[0, 4, 4, 0] = 1.0
    y = np.abs(np.asarray(conv(jnp.asarray(x))))[0]
    assert y.shape == (9, 9, 6)
    nz_plain = {(r - 4, c - 4) for r, c in zip(*np.nonzero(y[..., :4].sum(-1)))}
    nz_atrous = {(r - 4, c - 4) for r, c in zip(*np.nonzero(y[..., 4:].sum(-1)))}
    assert nz_plain == {(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)}
    assert nz_atrous == {(dr, dc) for dr in (-2, 0, 2) for dc in (-2, 0, 2)}


def test_center_emphasis_boosts_centre_init_and_marks_lr():
    conv = L.Conv(64, 64, 3, center_emphasis=0.3, center_lr=1.5, rngs=rngs(0))
    k = np.asarray(conv.kernel[...])
    centre_var = k[1, 1].var()
    other_var = np.delete(k.reshape(9, -1), 4, axis=0).var()
    # He var 2/(9*64); centre adds 0.09*2/64: expected ratio 1.81
    assert 1.5 < centre_var / other_var < 2.2
    assert conv.kernel.get_metadata()["center_lr_multiplier"] == 1.5
    plain = L.Conv(64, 64, 3, rngs=rngs(0))
    assert "center_lr_multiplier" not in plain.kernel.get_metadata()


def test_center_param_is_added_into_the_kernel_centre():
    conv = L.Conv(4, 5, 5, center_param=True, center_emphasis=0.3, center_lr=1.5, rngs=rngs(0))
    assert conv.center[...].shape == (4, 5)
    assert conv.center.get_metadata()["lr_multiplier"] == 1.5
    assert "lr_multiplier" not in conv.kernel.get_metadata()
    assert "lr_multiplier" not in L.Conv(4, 5, 5, center_param=True, center_emphasis=0.3, rngs=rngs(0)).center.get_metadata()
    eff = np.array(conv.effective_kernel())
    raw = np.array(conv.kernel[...])
    np.testing.assert_allclose(eff[2, 2], raw[2, 2] + np.asarray(conv.center[...]), atol=1e-7)
    eff[2, 2] = raw[2, 2]
    np.testing.assert_array_equal(eff, raw)


# ------------------------------------------------------------------------------ biases and activations

def test_center_param_works_on_weights_restored_as_numpy():
    """Checkpoints load as NumPy arrays (``kifunet export`` and ``gtp`` put them into the model as they are): the
    centre weight must still be added (issue 30: ``'numpy.ndarray' object has no attribute 'at'``)."""
    conv = L.Conv(4, 5, 3, center_param=True, rngs=rngs(0))
    conv.kernel.value = np.asarray(conv.kernel[...])
    conv.center.value = np.full((4, 5), 0.25, np.float32)
    eff = np.asarray(conv.effective_kernel())
    np.testing.assert_allclose(eff[1, 1], np.asarray(conv.kernel[...])[1, 1] + 0.25, atol=1e-7)
    x = jnp.ones((1, 5, 5, 4))
    jax.make_jaxpr(conv)(x)  # the trace ``kifunet export`` makes


def test_position_bias_and_prelu():
    pb = L.PositionBias(3, 2)
    pb.bias[...] = jnp.arange(18, dtype=jnp.float32).reshape(3, 3, 2)
    x = jnp.ones((2, 3, 3, 2))
    np.testing.assert_array_equal(np.asarray(pb(x))[1], 1 + np.arange(18).reshape(3, 3, 2))
    act = L.PReLU(2, init=0.25)
    assert np.asarray(act.alpha[...]).tolist() == [0.25, 0.25]
    act.alpha[...] = jnp.array([0.0, 0.5])
    y = np.asarray(act(jnp.array([[-2.0, -2.0], [3.0, 3.0]])))
    np.testing.assert_array_equal(y, [[0.0, -1.0], [3.0, 3.0]])
    np.testing.assert_array_equal(np.asarray(L.crelu(jnp.array([[-2.0, 3.0]]))), [[0.0, 3.0, 2.0, 0.0]])


def test_global_pool_matches_numpy():
    g = np.asarray(_rand((2, 19, 19, 3)))
    out = np.asarray(L.global_pool(jnp.asarray(g), stdev=True, board_scaling=True))
    mean = g.mean(axis=(1, 2))
    ref = np.concatenate([mean, mean * 0.5, g.max(axis=(1, 2)), g.std(axis=(1, 2))], axis=-1)
    np.testing.assert_allclose(out, ref, atol=1e-5)
    g9 = np.asarray(_rand((1, 9, 9, 2)))
    scaled = np.asarray(L.global_pool(jnp.asarray(g9), board_scaling=True))[:, 2:4]
    np.testing.assert_allclose(scaled, g9.mean(axis=(1, 2)) * -0.5, atol=1e-6)
    assert L.pooled_features(3, stdev=True, board_scaling=True) == 12


def test_gps_equals_hand_computation():
    """NoGoZero+ GPS: X + FC([mean, max](relu(BN(G)))), checked against numpy with non-trivial BN stats."""
    gps = L.GPS(4, 2, rngs=rngs(0))
    rng = np.random.default_rng(3)
    bn = gps.bn
    scale, bias = rng.normal(size=2).astype(np.float32), rng.normal(size=2).astype(np.float32)
    rmean, rvar = rng.normal(size=2).astype(np.float32), rng.uniform(0.5, 2.0, size=2).astype(np.float32)
    bn.scale[...], bn.bias[...] = jnp.asarray(scale), jnp.asarray(bias)
    bn.mean[...], bn.var[...] = jnp.asarray(rmean), jnp.asarray(rvar)
    w = rng.normal(size=(4, 4)).astype(np.float32)
    b = rng.normal(size=4).astype(np.float32)
    gps.pool_bias.dense.kernel[...], gps.pool_bias.dense.bias[...] = jnp.asarray(w), jnp.asarray(b)
    gps.eval()
    x = np.asarray(_rand((2, 5, 5, 4), 1))
    g = np.asarray(_rand((2, 5, 5, 2), 2))
    gn = np.maximum((g - rmean) / np.sqrt(rvar + 1e-3) * scale + bias, 0.0)
    pooled = np.concatenate([gn.mean(axis=(1, 2)), gn.max(axis=(1, 2))], axis=-1)  # [B, 2*C2]
    ref = x + (pooled @ w + b)[:, None, None, :]
    np.testing.assert_allclose(np.asarray(gps(jnp.asarray(x), jnp.asarray(g))), ref, atol=1e-5)


# ------------------------------------------------------------------------------------------------ MAO

def test_select_by_mean_picks_the_largest_spatial_mean():
    maps = np.asarray(_rand((3, 4, 4, 5, 3), 7))
    out, winners = L.select_by_mean(jnp.asarray(maps))
    means = maps.mean(axis=(1, 2))
    np.testing.assert_array_equal(np.asarray(winners), means.argmax(-1))
    ref = np.take_along_axis(maps, means.argmax(-1)[:, None, None, :, None], axis=-1)[..., 0]
    np.testing.assert_allclose(np.asarray(out), ref, atol=1e-6)


def test_mao_layer_selection_masks_and_determinism():
    layer = L.MAOLayer(6, 5, 4, mask_rate=0.5, rngs=rngs(0))
    x = _rand((3, 7, 7, 6), 4)
    layer.eval()
    maps = np.asarray(layer.candidate_maps(x))  # [B, H, W, U, K]
    winners = maps.mean(axis=(1, 2)).argmax(-1)
    assert len(np.unique(winners)) > 1, "test needs several winning candidates to be meaningful"
    expected = np.take_along_axis(maps, winners[:, None, None, :, None], axis=-1)[..., 0]
    y_eval = np.asarray(layer(x))
    np.testing.assert_allclose(y_eval, expected, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(layer(x)), y_eval)  # inference is deterministic
    layer.train()
    y1, y2 = np.asarray(layer(x)), np.asarray(layer(x))
    assert np.abs(y1 - y_eval).max() > 1e-3  # masks change the output
    assert np.abs(y1 - y2).max() > 1e-3  # a fresh mask per call


def test_mao_mask_is_per_candidate_input_channel():
    """In training each candidate is the conv of a masked input: kernel columns are 0 or 1/(1-rate) x."""
    layer = L.MAOLayer(8, 3, 2, mask_rate=0.5, rngs=rngs(1))
    x = np.zeros((1, 3, 3, 8), np.float32)
    layer.conv.bias[...] = jnp.zeros(6)
    layer.train()
    per_channel = []
    for c in range(8):  # impulse on one input channel at the centre, read each candidate's centre output
        xc = x.copy()
        xc[0, 1, 1, c] = 1.0
        per_channel.append(np.asarray(layer.candidate_maps(jnp.asarray(xc)))[0, 1, 1].reshape(-1))
    # each call draws a new mask; the ratio to the unmasked centre tap must be 0 or 2
    k = np.asarray(layer.conv.kernel[...])[1, 1]  # [C_in, U*K]
    ratio = np.stack(per_channel) / k
    assert set(np.round(ratio, 4).ravel().tolist()) <= {0.0, 2.0}
    assert 0.0 in ratio and 2.0 in np.round(ratio, 4)


# ---------------------------------------------------------------------------------------------- ranks

def test_rank_index_and_embedding():
    ranks = jnp.array([0, 8, -1, -30, -45, 9, 17, 30, -128])
    idx = np.asarray(L.rank_index(ranks))
    np.testing.assert_array_equal(idx, [30, 38, 29, 0, 0, 39, 47, 47, 48])
    assert L.NUM_RANK_ROWS == 49
    emb = L.RankEmbedding(4, rngs=rngs(0))
    out = np.asarray(emb(ranks, 9))
    assert out.shape == (9, 1, 1, 4)
    np.testing.assert_array_equal(out[3], out[4])  # 45k clipped to 30k
    assert np.abs(out[0] - out[1]).max() > 0  # 1d != 9d
    np.testing.assert_array_equal(np.asarray(emb(None, 2))[0], out[8])  # None = unknown


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_mao_rejects_bad_rate(rate):
    with pytest.raises(ValueError):
        L.MAOLayer(2, 2, 2, mask_rate=rate, rngs=rngs(0))


# ------------------------------------------------------------------- broadcast parameters in bfloat16

def _bf16_exact(shape, seed):
    """Random values that bfloat16 holds exactly, so a float32 and a bfloat16 module see the same numbers."""
    return _rand(shape, seed).astype(jnp.bfloat16).astype(jnp.float32)


def _param_grads(make, dtype, x, cot):
    """Gradients of ``sum(module(x) * cot)`` with respect to the module's parameters, in float64 NumPy."""
    module = make(dtype)
    graph, params, rest = nnx.split(module, nnx.Param, ...)

    def f(p):
        y = nnx.merge(graph, p, jax.tree.map(lambda v: v, rest))(x.astype(dtype))
        assert y.dtype == dtype
        return jnp.sum(y.astype(jnp.float32) * cot)

    g = jax.grad(f)(params)
    return {jax.tree_util.keystr(k): np.asarray(v, np.float64) for k, v in jax.tree_util.tree_leaves_with_path(g)}


BROADCAST_MODULES = {
    "position_bias": lambda dt: L.PositionBias(19, 4),
    "prelu": lambda dt: L.PReLU(4, init=0.25),
    "conv_bias": lambda dt: L.Conv(4, 4, 1, use_bias=True, dtype=dt, rngs=rngs(0)),
    "batch_norm": lambda dt: L.batch_norm(4, dtype=dt, param_dtype=jnp.float32, rngs=rngs(0)),
}


@pytest.mark.parametrize("name", sorted(BROADCAST_MODULES))
def test_bf16_broadcast_parameter_gradients_are_float32_sums(name):
    # batch 256 x 361 points = 92,416 terms per channel: a bfloat16 reduction of them is tens of percent off on the
    # CPU; summed in float32 the bfloat16 module's gradients match the float32 module's on the same batch and
    # parameters within 1% (in practice ~1e-6: the same exact products, another summation order)
    x = _bf16_exact((256, 19, 19, 4), 1) + 0.5
    cot = _bf16_exact((256, 19, 19, 4), 2) + 0.25  # a mean that does not cancel: the sum is not tiny
    make = BROADCAST_MODULES[name]
    ref = _param_grads(make, jnp.float32, x, cot)
    low = _param_grads(make, jnp.bfloat16, x, cot)
    checked = [k for k in ref if "kernel" not in k]
    assert checked
    for k in checked:
        err = np.linalg.norm(low[k] - ref[k]) / np.linalg.norm(ref[k])
        assert err < 0.01, (name, k, err)


def test_add_param_keeps_float32_exactly_and_bf16_output_dtype():
    x, p = _rand((2, 3, 3, 4), 3), _rand((4,), 4)
    np.testing.assert_array_equal(np.asarray(L.add_param(x, p)), np.asarray(x + p))
    y = L.add_param(x.astype(jnp.bfloat16), p)
    assert y.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(y, np.float32), np.asarray(x + p), rtol=1e-2, atol=1e-2)
