"""One way to run a net (kifunet.models.forward): the declared facts match what every net does, and every wrapper
(training's ModelDef, eval's Predictor, play's Policy and the exported policy) gives the model's own outputs."""

import jax
import numpy as np
import pytest
from flax import nnx

from kifunet import models
from kifunet.models.forward import Forward, NetFacts, Outputs

TINY = [n for n in models.names() if n.endswith("_tiny")]


def _abstract_logits_shape(model, n: int):
    """The logits' shape of ``model`` asked to play n x n (traced, nothing runs), or None when it cannot."""
    graphdef, state = nnx.split(model)

    def run(state, x):
        m = nnx.merge(graphdef, state)
        m.board_size = n
        return m(x).logits

    try:
        return jax.eval_shape(run, state, jax.ShapeDtypeStruct((1, n, n, model.in_planes), np.float32)).shape
    except Exception:  # noqa: BLE001 -- a shape error: the weights are tied to the trained board
        return None


@pytest.mark.slow
@pytest.mark.parametrize("name", models.names())
def test_declared_board_sizes_are_what_the_net_can_trace(name):
    model = nnx.eval_shape(lambda: models.create(name))
    facts = model.facts
    for n in (2, 7, 25):
        plays = _abstract_logits_shape(model, n) == (1, n * n + 1)
        assert facts.accepts(n) == plays, (name, n)
    assert facts.accepts(model.board_size)


def _traced_facts(model, x) -> tuple[bool, bool, bool]:
    """``(has_value, reads_rank, reads_profile)`` from one trace of the forward pass on ``x`` (a shape; nothing
    runs; ``has_pass`` is checked on the computed logits in ``tests/test_models.py``): whether the
    output has a value and whether an equation takes the ``rank`` / ``profile`` input (an embedding whose last
    layer starts at zero changes no output until trained, so the outputs could not tell)."""
    b = x.shape[0]
    closed = jax.make_jaxpr(lambda x, r, p: model(x, rank=r, profile=p))(
        x, jax.ShapeDtypeStruct((b,), np.int32), jax.ShapeDtypeStruct((b, 46), np.float32))
    jaxpr = closed.jaxpr
    taken = [any(v is var for eqn in jaxpr.eqns for v in eqn.invars) for var in jaxpr.invars]
    return len(jaxpr.outvars) == 2, taken[1], taken[2]


@pytest.mark.slow
@pytest.mark.parametrize("name", TINY)
def test_declared_facts_are_what_the_net_does(name):
    import inspect

    from kifunet.models.registry import spec

    has_switch = "value_head" in inspect.signature(spec(name).family).parameters
    x = jax.ShapeDtypeStruct((2, 9, 9, models.default_in_planes(name)), np.float32)
    plain = models.create(name, board_size=9)
    every = models.create(name, board_size=9, rank_embedding=True, profile_embedding=4,
                          **({"value_head": True} if has_switch else {}))
    for model in (plain, every):
        model.eval()  # no BatchNorm update or MAO mask while tracing
        facts = model.facts
        assert (facts.has_value, facts.reads_rank, facts.reads_profile) == _traced_facts(model, x)
        assert (facts.board_size, facts.in_planes, facts.has_pass) == (9, x.shape[-1], plain.facts.has_pass)
    assert every.facts.reads_rank and every.facts.reads_profile and every.facts.has_value == (
        has_switch or name == "qiqiao_tiny")


def test_a_policy_knows_its_pass_output_before_the_net_has_run():
    """``has_pass`` is the model's declaration: known before the first pass (it was None until then, so a
    caller that asked first treated a net that learns pass as one without)."""
    from kifunet.play.policy import fresh_policy

    assert fresh_policy("agz_tiny", 9).has_pass is True
    assert fresh_policy("gonn_tiny", 9).has_pass is False


def test_a_policy_refuses_a_board_its_net_declares_it_cannot_play(monkeypatch):
    """``size_problem`` follows the declared facts; the reason names the weight tied to the trained board."""
    from kifunet.play.policy import fresh_policy

    pol = fresh_policy("gonn_tiny", 9)
    assert pol.size_problem(13) is None and pol.resized(13).board_size == 13
    monkeypatch.setattr(models.GoNNResNet, "resizable", False)
    pol = fresh_policy("gonn_tiny", 9)
    assert "cannot play 13x13" in pol.size_problem(13)
    fixed = fresh_policy("maddison_tiny", 9)
    assert "its weights are shaped for 9x9" in fixed.size_problem(13)


@pytest.mark.slow
@pytest.mark.parametrize("name,extra", [("qiqiao_tiny", {"profile_embedding": 4}),
                                        ("agz_tiny", {"rank_embedding": True})])
def test_every_wrapper_gives_the_models_own_outputs(name, extra):
    """The model's call, :class:`Forward`, training's ``ModelDef.apply``, eval's ``Predictor`` and play's
    ``Policy`` give the same logits and value on the same rows, and report the same facts."""
    from kifunet.eval.evaluate import Predictor
    from kifunet.play.policy import Policy, feature_set_for
    from kifunet.train.steps import ModelDef

    n = models.default_board_size(name)
    model = models.create(name, board_size=n, rngs=nnx.Rngs(1), **extra)
    fs = feature_set_for(model.in_planes)
    model.eval()
    x = np.asarray(jax.random.bernoulli(jax.random.key(2), 0.3, (3, n, n, model.in_planes)), np.float32)
    rank, to_move = np.array([8, 8, 8], np.int32), np.array([2, 2, 2], np.int32)
    pol = Policy(model, fs, n, rank=8, profile="year=2010,source=kgs")
    prof = pol.profile_batch(3) if model.facts.reads_profile else None
    want = model(x, rank=rank, to_move=to_move, profile=prof)

    got = Forward(model)(x, rank, to_move, prof)
    defs = ModelDef(model)
    batch = {"planes": x, "rank": rank, "to_move": to_move, **({"profile": prof} if prof is not None else {})}
    logits, value, _ = defs.apply(defs.params, defs.extra, batch, train=False)
    pred = Predictor(model, fs)
    p_logits, p_value = pred.predict_with_value({"planes": x, "player_rank": rank, "to_move": to_move,
                                                 "profile": prof})
    ran = pol.run_batch(x, 2)
    r_logits, r_value = ran.logits, ran.value
    for lg, v in ((got.logits, got.value), (logits, value), (p_logits, p_value), (r_logits, r_value)):
        np.testing.assert_allclose(np.asarray(lg), np.asarray(want.logits), rtol=1e-5, atol=1e-5)
        if want.value is None:
            assert v is None
        else:
            np.testing.assert_allclose(np.asarray(v), np.asarray(want.value), rtol=1e-5, atol=1e-5)
    assert model.facts == pol.facts == pred.facts
    assert defs.has_value == pred.has_value == pol.has_value == model.facts.has_value
    assert pred.reads_profile == pol.reads_profile == model.facts.reads_profile


def test_facts_are_a_frozen_record():
    facts = NetFacts(board_size=9, in_planes=10, has_value=True, has_pass=True, reads_rank=False,
                     reads_profile=False, resizable=False)
    with pytest.raises(Exception):
        facts.has_pass = False  # type: ignore[misc]
    assert facts.accepts(9) and not facts.accepts(13)
