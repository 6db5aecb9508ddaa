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
