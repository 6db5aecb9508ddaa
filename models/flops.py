"""Analytical forward cost per position: multiply-accumulates of the convolutions and dense layers (padding
taps counted, as GoNN counted; BatchNorm, activations and pooling not); 2 FLOPs per MAC, a training step 3
forwards."""

from __future__ import annotations

from flax import nnx

from kifunet.models.layers import Conv, LinePairConv


def count_macs(model: nnx.Module) -> int:
    """Forward multiply-accumulates for one position on ``model.board_size``."""
    points = model.board_size * model.board_size
    total = 0
    for _, module in nnx.iter_modules(model):
        if isinstance(module, (Conv, LinePairConv)):
            total += points * module.macs_per_point()
        elif isinstance(module, nnx.Linear):
            total += module.in_features * module.out_features
    return total


def forward_flops(model: nnx.Module) -> int:
    """``2 * count_macs(model)``."""
    return 2 * count_macs(model)


def train_flops(model: nnx.Module) -> int:
    """Forward + backward FLOPs per position: ``3 * forward_flops(model)``."""
    return 3 * forward_flops(model)


def _on_board(kernel_size: int, dilation: int, n: int) -> float:
    """The share of a same-padded ``kernel_size`` x ``kernel_size`` kernel's taps (``dilation`` apart) that land on
    an ``n`` x ``n`` board, averaged over its points."""
    half = kernel_size // 2
    inside = sum(1 for i in range(n) for t in range(-half, half + 1) if 0 <= i + t * dilation < n)
    return (inside / (n * kernel_size)) ** 2


def counted_train_flops(model: nnx.Module) -> float:
    """:func:`train_flops` as XLA's cost analysis counts a compiled step: padding taps not counted, and the first
    convolution without an input gradient (two forwards, not three); elementwise work left out."""
    points = model.board_size * model.board_size
    total, first = 0.0, True
    for _, module in nnx.iter_modules(model):
        if isinstance(module, Conv):
            share = _on_board(module.kernel_size, module.dilation, model.board_size)
            total += (2 if first else 3) * 2 * points * module.macs_per_point() * share
            first = False
        elif isinstance(module, LinePairConv):
            total += 3 * 2 * points * module.macs_per_point()
            first = False
        elif isinstance(module, nnx.Linear):
            total += 3 * 2 * module.in_features * module.out_features
    return total
