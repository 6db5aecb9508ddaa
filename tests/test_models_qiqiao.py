"""The Qiqiao policy-value net (models/qiqiao.py): its size, layer by layer, and its forward pass against NumPy.

The full-size net is only built with ``nnx.eval_shape``; the forward pass runs ``qiqiao_tiny``. The call contract
(tuple output, value range, gradients) is checked with the other two-headed nets in tests/test_models.py.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from kifunet import models

from model_helpers import _fast_compiles, rngs  # noqa: F401  (autouse fixture)


def abstract(name, **kw):
    return nnx.eval_shape(lambda: models.create(name, rngs=rngs(0), **kw))


def sizes(state) -> int:
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(state))


def test_qiqiao_has_the_references_333951_parameters_part_by_part():
    """docs/architectures.md's hand arithmetic: body 95,264 + policy 188,250 + value 50,437 = 333,951 on 9x9 with
    the 10 qiqiao planes, which the registry gives by default."""
    m = abstract("qiqiao")
    assert (m.board_size, m.in_planes, m.has_value) == (9, 10, True)
    assert models.default_board_size("qiqiao") == 9 and models.default_in_planes("qiqiao") == 10
    p = nnx.state(m, nnx.Param)
    shapes = {k: [tuple(leaf.shape) for leaf in jax.tree.leaves(p[k])] for k in p}
    # every conv and dense layer with its bias (leaves in key order: bias, kernel)
    assert shapes["body"] == [(32,), (3, 3, 10, 32), (64,), (3, 3, 32, 64), (128,), (3, 3, 64, 128)]
    assert shapes["policy_conv"] == [(8,), (1, 1, 128, 8)]
    assert shapes["policy_hidden"] == [(256,), (648, 256)] and shapes["policy_out"] == [(82,), (256, 82)]
    assert shapes["value_conv"] == [(4,), (1, 1, 128, 4)]
    assert shapes["value_hidden"] == [(128,), (324, 128), (64,), (128, 64)]
    assert shapes["value_out"] == [(1,), (64, 1)]
    body = sizes(p["body"])
    policy = sum(sizes(p[k]) for k in ("policy_conv", "policy_hidden", "policy_out"))
    value = sum(sizes(p[k]) for k in ("value_conv", "value_hidden", "value_out"))
    assert (body, policy, value) == (95_264, 188_250, 50_437)
    assert models.count_params(m) == 333_951
    # the dense layers grow with the board: 19x19 is another net
    # (policy and value dense inputs, and the policy output: 256 weights + 1 bias per extra point)
    assert models.count_params(abstract("qiqiao", board_size=19)) == 333_951 + (361 - 81) * (8 * 256 + 4 * 128 + 257)


def _conv(x, kernel, bias):
    """Same-padded stride-1 conv in NumPy: x [B, N, N, Ci], kernel [k, k, Ci, Co]."""
    k = kernel.shape[0]
    n = x.shape[1]
    pad = np.pad(x, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
    out = sum(np.einsum("bhwc,cd->bhwd", pad[:, i:i + n, j:j + n], kernel[i, j]) for i in range(k) for j in range(k))
    return out + bias


def test_tiny_forward_matches_a_numpy_reading_of_the_reference():
    """ReLU after every conv and hidden dense layer, logits without softmax, tanh on the value; both heads read the
    third conv's output."""
    m = models.create("qiqiao_tiny", rngs=rngs(1))
    m.eval()
    x = (np.random.default_rng(0).random((3, 9, 9, 10)) < 0.3).astype(np.float32)
    logits, value = nnx.jit(lambda m, x: m(x))(m, jnp.asarray(x))[:2]
    p = jax.tree.map(np.asarray, nnx.to_pure_dict(nnx.state(m, nnx.Param)))
    relu = lambda a: np.maximum(a, 0)  # noqa: E731
    dense = lambda a, d: a @ d["kernel"] + d["bias"]  # noqa: E731
    h = x
    for i in range(3):
        h = relu(_conv(h, p["body"][i]["kernel"], p["body"][i]["bias"]))
    pol = relu(_conv(h, p["policy_conv"]["kernel"], p["policy_conv"]["bias"])).reshape(3, -1)
    want_logits = dense(relu(dense(pol, p["policy_hidden"])), p["policy_out"])
    v = relu(_conv(h, p["value_conv"]["kernel"], p["value_conv"]["bias"])).reshape(3, -1)
    for d in (p["value_hidden"][0], p["value_hidden"][1]):
        v = relu(dense(v, d))
    want_value = np.tanh(dense(v, p["value_out"])[:, 0])
    np.testing.assert_allclose(np.asarray(logits), want_logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(value), want_value, rtol=1e-4, atol=1e-6)
    assert np.ptp(want_value) > 0 and logits.shape == (3, 82)
