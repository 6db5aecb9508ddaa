"""The profile input of every model family (``profile_embedding=H``, :class:`kifunet.models.layers.ProfileEmbedding`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from kifunet import models
from kifunet.data_prep import profiles

TINY = [n for n in models.names() if n.endswith("_tiny")]
H = 8


def _inputs(name, batch=3, seed=0):
    size = models.default_board_size(name) if name.startswith("qiqiao") else 9
    c = models.default_in_planes(name)
    rng = np.random.default_rng(seed)
    planes = jnp.asarray(rng.integers(0, 2, (batch, size, size, c)), jnp.float32)
    return size, planes, jnp.asarray([0, 5, -128][:batch], jnp.int32), jnp.asarray([1, 2, 1][:batch], jnp.int32)


def _profile_rows():
    return jnp.asarray(np.stack([profiles.encode(profiles.parse("rank=7d,opponent=5d,year=2003,source=kgs")),
                                 profiles.encode(profiles.parse("rank=3p,date=2018-05-01,source=fox,time=fast")),
                                 profiles.encode(profiles.UNKNOWN_PROFILE)]))


@pytest.mark.parametrize("name", TINY)
def test_profile_embedding_adds_its_documented_parameters(name):
    size = models.default_board_size(name) if name.startswith("qiqiao") else 9
    plain = nnx.eval_shape(lambda: models.create(name, board_size=size, rngs=nnx.Rngs(0)))  # shapes are enough
    prof = nnx.eval_shape(lambda: models.create(name, board_size=size, rngs=nnx.Rngs(0), profile_embedding=H))
    f = prof.profile_embedding.out.out_features
    assert models.count_params(prof) - models.count_params(plain) == profiles.SIZE * H + H + H * f + f
    assert plain.profile_embedding is None


@pytest.mark.parametrize("name", TINY)
def test_a_new_profiled_net_starts_as_the_net_without_it_then_reads_the_profile(name):
    size, planes, rank, to_move = _inputs(name)
    net = models.create(name, board_size=size, rngs=nnx.Rngs(1), profile_embedding=H)
    net.eval()
    rows = _profile_rows()
    base = net(planes, rank, to_move).logits
    told = net(planes, rank, to_move, profile=rows).logits
    np.testing.assert_array_equal(np.asarray(base), np.asarray(told))  # the output layer starts at zero
    out = net.profile_embedding.out
    out.kernel[...] = jax.random.normal(jax.random.key(2), out.kernel.shape) * 0.5
    told = np.asarray(net(planes, rank, to_move, profile=rows).logits)
    unknown = np.asarray(net(planes, rank, to_move).logits)
    # row 2's profile is all unknown: the same as no profile; rows 0 and 1 differ from it
    np.testing.assert_allclose(told[2], unknown[2], rtol=1e-5, atol=1e-5)
    assert np.abs(told[:2] - unknown[:2]).max() > 1e-4


@pytest.mark.parametrize("name", ["gonn_tiny", "maddison_tiny"])
def test_a_net_without_the_option_ignores_the_profile(name):
    size, planes, rank, to_move = _inputs(name)
    net = models.create(name, board_size=size, rngs=nnx.Rngs(3))
    net.eval()
    a = np.asarray(net(planes, rank, to_move).logits)
    b = np.asarray(net(planes, rank, to_move, profile=_profile_rows()).logits)
    np.testing.assert_array_equal(a, b)


def test_a_profile_of_the_wrong_width_is_refused():
    size, planes, rank, to_move = _inputs("gonn_tiny")
    net = models.create("gonn_tiny", board_size=size, rngs=nnx.Rngs(0), profile_embedding=H)
    with pytest.raises(ValueError, match=r"profile must be \[B, 46\]"):
        net(planes, rank, to_move, profile=jnp.zeros((3, 45)))
    with pytest.raises(ValueError, match="profile_embedding must be"):
        models.create("gonn_tiny", board_size=size, rngs=nnx.Rngs(0), profile_embedding=-1)
