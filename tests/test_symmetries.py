"""D4 symmetries: group laws, the written tables against brute force, planes and moves moving together,
batch against per-example, NumPy against JAX."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.symmetries import (
    COMPOSE, INVERSE, NAMES, apply_index, apply_index_batch, apply_planes, apply_planes_batch, apply_policy,
    apply_policy_batch, index_table, source_table, transform_point,
)

S = range(8)


def generic(n: int, c: int = 1) -> np.ndarray:
    """A board with no symmetry at all: every (point, channel) holds a different value."""
    return np.arange(n * n * c).reshape(n, n, c)


def which(images, y) -> int:
    hits = [i for i, im in enumerate(images) if np.array_equal(im, y)]
    assert len(hits) == 1
    return hits[0]


def test_names_match_the_numpy_operations_of_the_table():
    x = generic(5)[..., 0]
    expected = {
        "identity": x, "flip_ud": x[::-1, :], "flip_lr": x[:, ::-1], "rot180": np.rot90(x, 2), "transpose": x.T,
        "rot270": np.rot90(x, -1), "rot90": np.rot90(x, 1), "anti_transpose": x[::-1, ::-1].T,
    }
    assert len(NAMES) == 8
    for s, name in enumerate(NAMES):
        assert np.array_equal(apply_planes(x[..., None], s)[..., 0], expected[name]), name


def test_three_bit_code():
    # s & 1 reverses rows, s & 2 reverses columns, s & 4 transposes, in that order.
    n = 4
    for s in S:
        for r, c in itertools.product(range(n), range(n)):
            r1 = n - 1 - r if s & 1 else r
            c1 = n - 1 - c if s & 2 else c
            assert transform_point((r, c), s, n) == ((c1, r1) if s & 4 else (r1, c1))


def test_all_eight_images_distinct():
    for n in (2, 3, 19):
        images = [apply_planes(generic(n), s) for s in S]
        for a, b in itertools.combinations(range(8), 2):
            assert not np.array_equal(images[a], images[b]), (n, a, b)


def test_compose_table_is_apply_b_then_a():
    x = generic(5, 2)
    images = [apply_planes(x, s) for s in S]
    for a, b in itertools.product(S, S):
        assert which(images, apply_planes(apply_planes(x, b), a)) == COMPOSE[a, b], (a, b)


def test_group_laws_via_the_tables():
    assert COMPOSE.shape == (8, 8) and INVERSE.shape == (8,)
    assert np.array_equal(COMPOSE[0], np.arange(8)) and np.array_equal(COMPOSE[:, 0], np.arange(8))
    for s in S:  # closure: every row and column is a permutation of the group (a Latin square)
        assert sorted(COMPOSE[s]) == list(S) and sorted(COMPOSE[:, s]) == list(S)
        assert COMPOSE[INVERSE[s], s] == 0 and COMPOSE[s, INVERSE[s]] == 0
    for a, b, c in itertools.product(S, S, S):
        assert COMPOSE[COMPOSE[a, b], c] == COMPOSE[a, COMPOSE[b, c]]
    assert not np.array_equal(COMPOSE, COMPOSE.T)  # D4 is not abelian: the order convention matters
    assert [int(INVERSE[s]) for s in S] == [0, 1, 2, 3, 4, 6, 5, 7]
    with pytest.raises(ValueError):
        COMPOSE[0, 0] = 1  # read-only


def test_inverse_undoes_on_planes_and_moves():
    x = generic(7, 3)
    for s in S:
        assert np.array_equal(apply_planes(apply_planes(x, s), int(INVERSE[s])), x)
        flat = np.arange(50)
        assert np.array_equal(apply_index(apply_index(flat, s, 7), int(INVERSE[s]), 7), flat)


@pytest.mark.parametrize("n", [2, 5, 9, 19])
def test_planes_and_moves_stay_consistent(n):
    # one-hot planes at every point at once: (N*N, N, N, 1)
    onehots = np.eye(n * n, dtype=np.int8).reshape(n * n, n, n, 1)
    for s in S:
        moved = apply_planes(onehots, s).reshape(n * n, n * n)
        assert np.array_equal(moved.argmax(axis=1), apply_index(np.arange(n * n), s, n))
        assert apply_index(n * n, s, n) == n * n  # pass is fixed
        assert index_table(n)[s, n * n] == n * n
        for flat in (0, n - 1, n * n - 1, (n * n) // 2 + 1):
            assert apply_index(flat, s, n) == transform_point(divmod(flat, n), s, n)[0] * n \
                + transform_point(divmod(flat, n), s, n)[1]


def test_index_composition_matches_table():
    n, flat = 6, np.arange(37)
    for a, b in itertools.product(S, S):
        assert np.array_equal(apply_index(apply_index(flat, b, n), a, n), apply_index(flat, int(COMPOSE[a, b]), n))


def test_tables_are_cached_and_read_only():
    assert index_table(9) is index_table(9)
    assert source_table(9) is source_table(9)
    assert np.array_equal(source_table(9), index_table(9)[INVERSE.astype(int)])
    with pytest.raises(ValueError):
        index_table(9)[0, 0] = 5


def test_apply_index_types_and_errors():
    assert isinstance(apply_index(3, 1, 19), int)
    assert apply_index(np.array([[0, 361]]), 6, 19).shape == (1, 2)
    for bad in (-1, 362):
        with pytest.raises(ValueError):
            apply_index(bad, 0, 19)
        with pytest.raises(ValueError):
            apply_index_batch(np.array([0, bad]), np.array([0, 1]), 19)
    for bad_s in (-1, 8):
        with pytest.raises(ValueError):
            apply_index(0, bad_s, 19)
        with pytest.raises(ValueError):
            apply_planes(generic(3), bad_s)
        with pytest.raises(ValueError):
            apply_index_batch(np.array([0]), np.array([bad_s]), 19)
    with pytest.raises(ValueError):
        apply_planes(np.zeros((3, 4, 1)), 1)  # not square


def test_apply_planes_is_a_view_over_leading_axes():
    x = np.random.default_rng(0).random((2, 3, 5, 5, 4))
    for s in S:
        y = apply_planes(x, s)
        assert np.shares_memory(x, y)
        for i, j in itertools.product(range(2), range(3)):
            assert np.array_equal(y[i, j], apply_planes(x[i, j], s))


def test_batch_agrees_with_per_example():
    rng = np.random.default_rng(1)
    n, b = 19, 40
    x = rng.integers(0, 100, size=(b, n, n, 3)).astype(np.float32)
    s = rng.integers(0, 8, size=b)
    out = apply_planes_batch(x, s)
    assert out.shape == x.shape and out.dtype == x.dtype
    for i in range(b):
        assert np.array_equal(out[i], apply_planes(x[i], int(s[i])))
    # no channel axis, and more than one trailing axis
    x2 = rng.integers(0, 9, size=(b, n, n))
    assert np.array_equal(apply_planes_batch(x2, s), np.stack([apply_planes(x2[i][..., None], int(s[i]))[..., 0]
                                                               for i in range(b)]))
    x3 = rng.integers(0, 9, size=(b, 5, 5, 2, 3))
    assert np.array_equal(apply_planes_batch(x3, s), np.stack([apply_planes(x3[i].reshape(5, 5, 6), int(s[i]))
                                                               .reshape(5, 5, 2, 3) for i in range(b)]))
    flat = rng.integers(0, n * n + 1, size=b)
    got = apply_index_batch(flat, s, n)
    assert got.tolist() == [apply_index(int(f), int(t), n) for f, t in zip(flat, s)]
    with pytest.raises(ValueError):
        apply_planes_batch(x, s[:-1])


def test_policy_moves_with_the_board():
    rng = np.random.default_rng(2)
    n = 9
    p = rng.random((4, n * n + 1))
    for s in S:
        q = apply_policy(p, s, n)
        for k in range(n * n + 1):
            assert np.array_equal(q[:, apply_index(k, s, n)], p[:, k])
        assert np.array_equal(q.argmax(axis=1), apply_index(p.argmax(axis=1), s, n))
        assert np.array_equal(apply_policy(q, int(INVERSE[s]), n), p)  # test-time augmentation maps back
        # policy over the board == planes transform of the board part
        board = p[:, : n * n].reshape(4, n, n, 1)
        assert np.array_equal(q[:, : n * n], apply_planes(board, s).reshape(4, n * n))
    sb = rng.integers(0, 8, size=4)
    assert np.array_equal(apply_policy_batch(p, sb, n), np.stack([apply_policy(p[i], int(sb[i]), n)
                                                                   for i in range(4)]))
    with pytest.raises(ValueError):
        apply_policy(p[:, :-1], 0, n)


def test_importing_the_module_does_not_import_jax():
    code = "import sys; import kifunet.data_prep.symmetries as s; s.apply_planes_batch; " \
           "print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------------------------- JAX


def test_jax_agrees_with_numpy():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(3)
    n, b = 19, 24
    s = np.concatenate([np.arange(8), rng.integers(0, 8, size=b - 8)]).astype(np.int32)
    x = rng.integers(0, 100, size=(b, n, n, 5)).astype(np.float32)
    planes_jit = jax.jit(sym.apply_planes_jax)
    got = np.asarray(planes_jit(jnp.asarray(x), jnp.asarray(s)))
    assert np.array_equal(got, apply_planes_batch(x, s))

    flat = rng.integers(0, n * n + 1, size=b).astype(np.int32)
    flat[:3] = n * n  # passes
    index_jit = jax.jit(sym.apply_index_jax, static_argnums=2)
    assert np.array_equal(np.asarray(index_jit(jnp.asarray(flat), jnp.asarray(s), n)), apply_index_batch(flat, s, n))
    # every (point, symmetry) pair, on a small board
    m = 5
    ff, ss = np.meshgrid(np.arange(m * m + 1), np.arange(8))
    assert np.array_equal(np.asarray(sym.apply_index_jax(ff, ss, m)), index_table(m)[ss, ff])

    logits = rng.random((b, n * n + 1)).astype(np.float32)
    policy_jit = jax.jit(sym.apply_policy_jax, static_argnums=2)
    assert np.array_equal(np.asarray(policy_jit(jnp.asarray(logits), jnp.asarray(s), n)),
                          apply_policy_batch(logits, s, n))


def test_jax_planes_and_moves_stay_consistent():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    n = 9
    s = jnp.arange(8, dtype=jnp.int32)
    flat = jnp.array([0, 8, 40, 80, 17, 81, 33, 62], dtype=jnp.int32)
    onehot = jax.nn.one_hot(flat, n * n + 1)[:, : n * n].reshape(8, n, n, 1)
    moved = sym.apply_planes_jax(onehot, s).reshape(8, n * n)
    target = sym.apply_index_jax(flat, s, n)
    for i in range(8):
        if int(flat[i]) == n * n:
            assert float(moved[i].sum()) == 0 and int(target[i]) == n * n
        else:
            assert int(moved[i].argmax()) == int(target[i]) and float(moved[i].sum()) == 1
