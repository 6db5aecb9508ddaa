"""The analytic cost model (kifunet.models.flops) against hand counts of known layers and nets.

The convention (models/flops.py): a same-padded k x k conv costs ``N*N * k*k * C_in * C_out`` MACs on an
N x N board, padding taps included; a dense layer ``in * out``, once per position; BatchNorm, activations,
pooling and biases cost nothing; 2 FLOPs per MAC; forward+backward = 3 forwards. Every expected number
below was counted by hand from the layer or the model's definition, not computed with the formula.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from kifunet import models
from kifunet.models.layers import Conv

from model_helpers import rngs


class _OnBoard(nnx.Module):
    """One layer on an N x N board: what :func:`count_macs` needs (``board_size`` and modules)."""

    def __init__(self, board_size: int, layer: nnx.Module):
        self.board_size = board_size
        self.layer = layer


def abstract(name, **kw):
    return nnx.eval_shape(lambda: models.create(name, rngs=rngs(0), **kw))


# ------------------------------------------------------------------------------------------------ layers

@pytest.mark.parametrize("k,c_in,c_out,dilation,n,macs", [
    (3, 4, 6, 1, 9, 17_496),              # 9 taps x 4 x 6 = 216 per point, x 81 points
    (1, 4, 6, 1, 9, 1_944),               # 24 per point x 81
    (3, 4, 6, 2, 9, 17_496),              # dilation spreads the taps, it does not add any
    (5, 26, 192, 1, 19, 45_052_800),      # GoNN's stem: 25 x 26 x 192 = 124,800 per point, x 361
    (3, 7, 5, 1, 1, 315),                 # a 1 x 1 board still counts all 9 taps (padding counted)
])
def test_conv_macs_by_hand(k, c_in, c_out, dilation, n, macs):
    m = _OnBoard(n, Conv(c_in, c_out, k, dilation=dilation, rngs=nnx.Rngs(0)))
    assert models.count_macs(m) == macs
    assert models.forward_flops(m) == 2 * macs and models.train_flops(m) == 6 * macs


def test_dense_macs_are_counted_once_per_position():
    # AGZ's policy dense layer on 19x19: 2 x 361 inputs -> 362 outputs = 722 x 362 = 261,364 MACs
    m = _OnBoard(19, nnx.Linear(722, 362, rngs=nnx.Rngs(0)))
    assert models.count_macs(m) == 261_364


def test_unweighted_layers_cost_nothing():
    m = _OnBoard(19, nnx.BatchNorm(8, rngs=nnx.Rngs(0)))
    assert models.count_macs(m) == 0


def _xla_flops(layer, x):
    compiled = jax.jit(lambda x: layer(x)).lower(x).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    if not cost or "flops" not in cost:
        pytest.skip("this XLA backend gives no cost analysis")
    return cost["flops"]


def test_conv_count_agrees_with_xla():
    """XLA's own count, an oracle independent of ours: equal for 1x1; for 3x3, XLA skips the padding taps."""
    b, n, c_in, c_out = 2, 7, 4, 6
    x = jnp.ones((b, n, n, c_in))
    one = Conv(c_in, c_out, 1, rngs=nnx.Rngs(0))
    assert _xla_flops(one, x) == b * models.forward_flops(_OnBoard(n, one)) == 2 * 2 * 49 * 24
    three = Conv(c_in, c_out, 3, rngs=nnx.Rngs(0))
    ours = models.count_macs(_OnBoard(n, three))
    # per axis the 3 taps land on the board 7 + 6 + 6 = 19 times (out of 21): 19 x 19 of 21 x 21 taps
    assert ours == 21 * 21 * 24
    assert _xla_flops(three, x) == b * 2 * 19 * 19 * 24


# ------------------------------------------------------------------------------------------------ nets

@pytest.mark.parametrize("name,kw,macs", [
    # 5x5 36->8 (7,200) + 3x3 8->8 (576) + output 3x3 8->2 (144) = 7,920 per point, x 361
    ("maddison_tiny", {}, 2_859_120),
    # 5x5 48->8 (9,600) + 2 x 3x3 8->8 (1,152) + 1x1 8->1 (8) = 10,760 per point, x 81 (9x9)
    ("alphago_tiny", {"board_size": 9}, 871_560),
    # tied kernels cost their full size: 5x5 48->8 (9,600) + 3x3 8->8 (576) + 3x3 8->1 (72) = 10,248, x 361
    ("clark_storkey_tiny", {}, 3_699_528),
    # stem 3x3 17->8 (1,224) + block 2 x 3x3 8->8 (1,152) + policy 1x1 8->2 (16) = 2,392 x 361 = 863,512,
    # + policy dense 722 x 362 = 261,364 once
    ("agz_tiny", {}, 1_124_876),
    # ... + value head: 1x1 8->1 (8 x 361 = 2,888) + dense 361 x 8 (2,888) + dense 8 x 1 (8)
    ("agz_tiny", {"value_head": True}, 1_124_876 + 5_784),
    # stem 5x5 26->8 (5,200); ordinary block 2 x 576; dilated block 432 + 144 + 576; global block 3x3 8->8
    # (576) + 3x3 4->8 (288); head p1 3x3 8->8 (576) + g1 3x3 8->4 (288) + p2 5x5 16->1 (400): 9,632 per
    # point x 361 = 3,477,152; + pooled dense layers 8 x 4 (block) and 8 x 8 (head) = 96 once
    ("gonn_tiny", {}, 3_477_248),
    # ... + value head: 1x1 8->4 (32 x 361 = 11,552) + dense 8 (mean and max of 4) x 8 (64) + dense 8 x 1 (8)
    ("gonn_tiny", {"value_head": True}, 3_477_248 + 11_624),
    # Qiqiao on 9x9: convs 3x3 10->32 (2,880), 32->64 (18,432), 64->128 (73,728), policy 1x1 128->8 (1,024),
    # value 1x1 128->4 (512): 96,576 per point x 81 = 7,822,656; + dense 648 x 256 (165,888) + 256 x 82
    # (20,992) + 324 x 128 (41,472) + 128 x 64 (8,192) + 64 x 1 (64) = 236,608 once
    ("qiqiao", {}, 8_059_264),
    # tiny: 3x3 10->8 (720) + 2 x 3x3 8->8 (1,152) + two 1x1 8->2 (32) = 1,904 x 81 = 154,224; + dense 162 x 16
    # (2,592) + 16 x 82 (1,312) + 162 x 8 (1,296) + 8 x 8 (64) + 8 x 1 (8) = 5,272
    ("qiqiao_tiny", {}, 159_496),
    # stem 3x3 17->8 (1,224) + 2 x 1x1 8->8 (128); MAO layer 3x3 8->16 (8 units x 2 candidates, 1,152);
    # 2 mlpconv 3x3 + 1x1 8->8 (1,280); output MAO 3x3 8->362 (26,064): 29,848 per point x 361
    ("mao_tiny", {}, 10_775_128),
])
def test_tiny_models_by_hand(name, kw, macs):
    m = abstract(name, **kw)
    assert models.count_macs(m) == macs
    assert models.forward_flops(m) == 2 * macs and models.train_flops(m) == 6 * macs


def test_gonn_resnet5_exactly():
    """GoNN's 5-block net, counted exactly; the README's model gives 1.29 G (docs/gonn.md section 4.2).

    Per point: stem 5x5 26->192 124,800; 5 blocks x 2 x 3x3 192->192 (331,776 each) 3,317,760; head p1
    3x3 192->48 82,944 + g1 3x3 192->32 55,296 + p2 5x5 96->1 2,400: 3,583,200 x 361 = 1,293,535,200; plus the
    head's pooled dense 64 x 48 = 3,072.
    """
    assert models.count_macs(abstract("gonn_resnet5")) == 1_293_538_272
