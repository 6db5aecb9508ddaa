"""Shared by the model tests: unoptimised XLA compiles and fast RBG random keys."""

import jax
import pytest
from flax import nnx


@pytest.fixture(autouse=True, scope="module")
def _fast_compiles():
    """Unoptimised XLA compiles (Flax's own test habit): these tests compile much more than they compute."""
    old = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", old)


def rngs(seed=0):
    """RBG keys: their random ops compile ~7x faster than threefry's on CPU, which dominates model creation."""
    return nnx.Rngs(jax.random.key(seed, impl="rbg"))


def profiled_agz_tiny(board_size: int, scale: float, seed: int = 1):
    """An ``agz_tiny`` with an 8-wide profile MLP whose output layer (zero at creation, so it would read nothing)
    is set to ``scale`` x normal noise: a net whose output depends on the profile."""
    import jax.numpy as jnp

    from kifunet import models

    net = models.create("agz_tiny", board_size=board_size, profile_embedding=8, rngs=rngs(seed))
    out = net.profile_embedding.out
    out.kernel[...] = scale * jax.random.normal(jax.random.key(7), out.kernel.shape, jnp.float32)
    return net
