"""Chain pooling (models/chain_pool.py) against a plain flood fill, on random boards and a worst-case snake."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kifunet.models.chain_pool import chain_labels, chain_max


def _flood_labels(colour: np.ndarray) -> np.ndarray:
    """Reference: the smallest flat index of each 4-connected same-colour chain, N*N on empty points."""
    n = colour.shape[0]
    lab = np.full((n, n), n * n, np.int32)
    for start in range(n * n):
        r, c = divmod(start, n)
        if colour[r, c] == 0 or lab[r, c] < n * n:
            continue
        stack = [(r, c)]
        lab[r, c] = start
        while stack:
            y, x = stack.pop()
            for yy, xx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                if 0 <= yy < n and 0 <= xx < n and colour[yy, xx] == colour[r, c] and lab[yy, xx] == n * n:
                    lab[yy, xx] = start
                    stack.append((yy, xx))
    return lab


def _boards(k: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice([0, 1, 2], size=(k, n, n), p=[0.3, 0.35, 0.35])


def _snake(n: int) -> np.ndarray:
    """One black chain winding through every other row: its far end is about N*N/2 steps from its start."""
    colour = np.zeros((n, n), np.int64)
    colour[::2, :] = 1
    for r in range(1, n, 2):
        colour[r, n - 1 if r % 4 == 1 else 0] = 1
    return colour


@pytest.mark.slow
def test_labels_equal_a_flood_fill_on_random_boards_and_a_snake():
    boards = [*_boards(12, 9, 0), _snake(9), *_boards(4, 19, 1), _snake(19), np.zeros((9, 9), np.int64)]
    for colour in boards:
        got = np.asarray(chain_labels(jnp.asarray(colour == 1)[None], jnp.asarray(colour == 2)[None]))[0]
        np.testing.assert_array_equal(got, _flood_labels(colour))
    snake = _snake(19)
    got = np.asarray(chain_labels(jnp.asarray(snake == 1)[None], jnp.asarray(snake == 2)[None]))[0]
    assert set(np.unique(got[snake == 1])) == {0}  # one chain, however long


def test_chain_max_pools_each_channel_over_its_chain_and_keeps_empty_points():
    colour = _boards(3, 9, 2)
    x = np.random.default_rng(3).normal(size=(3, 9, 9, 5)).astype(np.float32)
    got = np.asarray(jax.jit(chain_max)(jnp.asarray(x), jnp.asarray(colour == 1), jnp.asarray(colour == 2)))
    want = x.copy()
    for i in range(3):
        lab = _flood_labels(colour[i])
        for chain in np.unique(lab[lab < 81]):
            mask = lab == chain
            want[i][mask] = x[i][mask].max(axis=0)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, x)  # the boards have chains of more than one stone


@pytest.mark.slow
def test_the_gradient_reaches_the_stone_that_holds_the_maximum():
    colour = np.zeros((1, 5, 5), np.int64)
    colour[0, 2, :] = 1  # one black chain along the middle row
    x = jnp.zeros((1, 5, 5, 1)).at[0, 2, 4, 0].set(3.0)
    g = jax.grad(lambda v: chain_max(v, jnp.asarray(colour == 1), jnp.asarray(colour == 2)).sum())(x)
    assert float(g[0, 2, 4, 0]) == 5.0  # every stone of the chain reads it
    assert float(jnp.abs(g).sum()) == 5.0 + 20.0  # plus each empty point's own value
