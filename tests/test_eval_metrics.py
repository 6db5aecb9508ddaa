"""eval/metrics.py against hand computations: ranks and ties, nats, ragged batches, masks, ensemble, breakdowns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kifunet.eval import metrics as M


def test_nll_and_rank_by_hand():
    z = np.log([[1.0, 2.0, 3.0, 4.0]])  # probabilities 0.1, 0.2, 0.3, 0.4
    for t, rank, p in ((3, 0, 0.4), (2, 1, 0.3), (1, 2, 0.2), (0, 3, 0.1)):
        r, nll = M.example_stats(z, [t])
        assert r.tolist() == [rank]
        assert nll[0] == pytest.approx(-math.log(p), rel=1e-12)


def test_ties_count_against_the_played_move():
    z = np.array([[1.0, 1.0, 0.0, 0.0, -1.0]])
    # target 0 ties with move 1 for first place: not top-1, top-2
    assert M.target_ranks(z, [0]).tolist() == [1]
    assert M.target_ranks(z, [1]).tolist() == [1]
    # target 2 ties with 3; moves 0, 1 are above: rank 3 -> top-4 but not top-3
    assert M.target_ranks(z, [2]).tolist() == [3]
    assert M.target_ranks(z, [4]).tolist() == [4]
    s = M.MetricSums(5)
    s.update(M.target_ranks(z, [2]), [0.0])
    assert [s.topk_correct(k) for k in (1, 2, 3, 4, 5)] == [0, 0, 0, 1, 1]
    # a constant output scores 0 at every k < M, whatever the target and the move order
    const = np.zeros((3, 362))
    r = M.target_ranks(const, [0, 180, 361])
    assert r.tolist() == [361, 361, 361]
    s = M.MetricSums(362)
    s.update(r, M.example_stats(const, [0, 180, 361])[1])
    assert s.accuracy(1) == 0.0 and s.accuracy(10) == 0.0 and s.accuracy(362) == 1.0
    assert s.cross_entropy == pytest.approx(math.log(362), rel=1e-12)
    assert s.perplexity == pytest.approx(362.0, rel=1e-9)


def test_training_top_k_is_the_same_rule_as_eval():
    """train/steps.topk_correct (jitted, float32) counts exactly the positions eval's ranks put in the top k."""
    import jax
    import jax.numpy as jnp

    from kifunet.train import steps

    rng = np.random.default_rng(0)
    z = rng.integers(-3, 4, size=(64, 12)).astype(np.float32)  # small integers: many exact ties
    z[:8] = 0.0  # constant rows
    t = rng.integers(0, 12, size=64)
    ranks = M.target_ranks(z, t)
    np.testing.assert_array_equal(np.asarray(jax.jit(M.played_move_rank)(jnp.asarray(z), jnp.asarray(t))), ranks)
    for k in (1, 2, 4, 11, 12):
        got = jax.jit(steps.topk_correct, static_argnums=2)(jnp.asarray(z), jnp.asarray(t), k)
        np.testing.assert_array_equal(np.asarray(got), (ranks < k).astype(np.float32))


def test_strictly_greater_than_kth_other():
    z = np.array([[5.0, 4.0, 3.0, 3.0, 2.0]])
    # the target at 3.0 with another 3.0: strictly greater than the 4th largest other (2.0) -> top-4, not top-3
    r = M.target_ranks(z, [2])[0]
    assert r == 3 and not r < 3 and r < 4


def _brute_rank(row, t):
    return sum(1 for j, v in enumerate(row) if j != t and v >= row[t])


def test_ragged_batches_give_identical_sums():
    rng = np.random.default_rng(0)
    b, m = 23, 50
    z = rng.normal(size=(b, m)) * 3
    z[4, 7] = z[4, 9]  # a tie somewhere
    t = rng.integers(0, m, size=b)
    t[4] = 9
    totals = {}
    for bs in (1, 5, 23, 64):
        s = M.MetricSums(m)
        for a in range(0, b, bs):
            s.update(*M.example_stats(z[a:a + bs], t[a:a + bs]))
        totals[bs] = s
    ref = totals[23]
    for s in totals.values():
        assert s.count == b
        assert s.nll_sum == ref.nll_sum  # exact, not approximate
        assert s.rank_hist.tolist() == ref.rank_hist.tolist()
    ranks = [_brute_rank(z[i], t[i]) for i in range(b)]
    assert ranks[4] == _brute_rank(z[4], 9) and z[4, 7] == z[4, 9]
    for k in range(1, 11):
        assert ref.topk_correct(k) == sum(r < k for r in ranks)
    lse = np.log(np.exp(z).sum(axis=1))
    nll = lse - z[np.arange(b), t]
    assert ref.cross_entropy == pytest.approx(nll.mean(), rel=1e-12)
    # what a mean of batch means would report with a ragged last batch of 3: different, and wrong
    means = [nll[a:a + 5].mean() for a in range(0, b, 5)]
    assert abs(np.mean(means) - nll.mean()) > 1e-3


def test_exact_sum_is_order_independent():
    s1, s2 = M.ExactSum(), M.ExactSum()
    s1.add([1e16, 1.0, -1e16])
    s2.add([-1e16])
    s2.add([1.0])
    s2.add([1e16])
    assert s1.value == 1.0 and s2.value == 1.0
    assert sum([1e16, 1.0, -1e16]) == 0.0  # the naive sum loses it


def test_legal_mask_renormalises_and_rejects_illegal_targets():
    z = np.array([[5.0, 0.0, 1.0, 2.0]])
    legal = np.array([[False, True, True, True]])
    r, nll = M.example_stats(z, [3], legal)
    assert r.tolist() == [0]  # the illegal 5.0 no longer outranks it
    p = math.exp(2) / (math.exp(0) + math.exp(1) + math.exp(2))
    assert nll[0] == pytest.approx(-math.log(p), rel=1e-12)
    r, _ = M.example_stats(z, [3])
    assert r.tolist() == [1]
    with pytest.raises(ValueError, match="illegal under the mask"):
        M.example_stats(z, [0], legal)


def test_ensemble_averages_probabilities_by_hand():
    pa = np.array([0.7, 0.2, 0.1])
    pb = np.array([0.1, 0.2, 0.7])
    za, zb = np.log(pa)[None] + 3.0, np.log(pb)[None] - 1.0  # logits: shifts do not matter
    lp = M.ensemble_log_probs([za, zb])
    assert np.exp(lp[0]) == pytest.approx([0.4, 0.2, 0.4], rel=1e-12)
    r, nll = M.example_stats(lp, [0])
    assert nll[0] == pytest.approx(-math.log(0.4), rel=1e-12)
    assert r.tolist() == [1]  # 0.4 ties with 0.4 exactly (mirrored passes): the tie rule applies
    r, nll = M.example_stats(lp, [1])
    assert r.tolist() == [2] and nll[0] == pytest.approx(-math.log(0.2), rel=1e-12)
    # with a mask each pass is renormalised over legal moves first
    legal = np.array([[True, True, False]])
    lpm = M.ensemble_log_probs([za, zb], legal)
    expect = (np.array([0.7, 0.2]) / 0.9 + np.array([0.1, 0.2]) / 0.3) / 2
    assert np.exp(lpm[0, :2]) == pytest.approx(expect, rel=1e-12)
    assert lpm[0, 2] == -np.inf


def test_breakdown_groups_add_up():
    bd = M.Breakdown(5, phase_starts=(1, 21, 51, 251))
    ranks = np.array([0, 1, 0, 4, 2, 0])
    nll = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    bd.update(ranks, nll, move_number=[1, 20, 21, 50, 51, 300], player_rank=[8, 8, -3, -128, 8, 0],
              to_move=[1, 2, 1, 2, 1, 2])
    d = bd.to_dict()
    assert list(d["by_phase"]) == ["1-20", "21-50", "51-250", "251+"]
    assert [v["count"] for v in d["by_phase"].values()] == [2, 2, 1, 1]
    assert d["by_phase"]["1-20"]["topk_correct"][:2] == [1, 2]
    assert d["by_phase"]["21-50"]["nll_sum"] == pytest.approx(0.7)
    assert set(d["by_rank"]) == {"?", "3k", "1d", "9d"}
    assert d["by_rank"]["9d"]["count"] == 3 and d["by_rank"]["9d"]["topk_correct"][0] == 1
    assert d["by_colour"]["black"]["count"] == 3 and d["by_colour"]["white"]["nll_sum"] == pytest.approx(1.2)
    for part in ("by_phase", "by_rank", "by_colour"):
        assert sum(v["count"] for v in d[part].values()) == d["count"] == 6
        assert sum(v["nll_sum"] for v in d[part].values()) == pytest.approx(d["nll_sum"])
        for k in range(5):
            assert sum(v["topk_correct"][k] for v in d[part].values()) == d["topk_correct"][k]
    assert d["accuracy"]["1"] == pytest.approx(3 / 6)
    assert d["rank_histogram"] == [3, 1, 1, 0, 1]
    assert M.topn_curve(d).tolist() == pytest.approx([3 / 6, 4 / 6, 5 / 6, 5 / 6, 1.0])
    # merging two halves equals one pass over everything
    a, b = M.Breakdown(5, (1, 21, 51, 251)), M.Breakdown(5, (1, 21, 51, 251))
    kw = dict(move_number=np.array([1, 20, 21, 50, 51, 300]), player_rank=np.array([8, 8, -3, -128, 8, 0]),
              to_move=np.array([1, 2, 1, 2, 1, 2]))
    a.update(ranks[:4], nll[:4], **{k: v[:4] for k, v in kw.items()})
    b.update(ranks[4:], nll[4:], **{k: v[4:] for k, v in kw.items()})
    a.merge(b)
    assert a.to_dict() == d


def test_bad_inputs_are_errors():
    """Bad shapes, targets and buckets are errors; bad logits are not (test_metrics_survive_any_logits)."""
    with pytest.raises(ValueError, match="targets"):
        M.example_stats(np.zeros((1, 3)), [3])
    with pytest.raises(ValueError, match="phase starts"):
        M.Breakdown(3, (5, 10))


# ------------------------------------------------------------------------------------------------ any logits
_EXTREME = (0.0, -0.0, 1.0, -1.0, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324,
            math.inf, -math.inf, math.nan)


def _score_everything(z, t, legal=None, value=None):
    """Every path of eval/metrics.py that logits (and a value) go through; returns the JSON-ready blocks."""
    ranks, nll = M.example_stats(z, t, legal)
    ens = M.ensemble_log_probs([z, z[:, ::-1][:, ::-1]], legal)
    ranks2, nll2 = M.example_stats(ens, t, legal)
    b = M.Breakdown(z.shape[1])
    outcome = np.resize(np.array([1, -1, 0, -128], np.int64), len(t))
    b.update(ranks, nll, move_number=np.arange(1, len(t) + 1), player_rank=np.zeros(len(t), np.int64),
             to_move=np.ones(len(t), np.int64), value=value, outcome=outcome if value is not None else None)
    b.update(ranks2, nll2, move_number=np.arange(1, len(t) + 1), player_rank=np.zeros(len(t), np.int64),
             to_move=np.ones(len(t), np.int64))
    d = b.to_dict()
    M.merge_breakdown_dicts([d, d])
    M.merge_block_dicts([d, b.total.to_dict()])
    return ranks, nll, d


def test_metrics_survive_any_logits():
    """A damaged net's logits (NaN, +-inf, huge finite) give numbers, not an exception: `kifunet eval` crashed in
    ``perplexity`` with ``OverflowError: math range error`` (math.exp of a huge cross-entropy)."""
    huge = np.array([[1e308, -1e308, 0.0, -1e308]])
    ranks, nll, d = _score_everything(huge, np.array([1]))
    assert ranks.tolist() == [3] and nll[0] == math.inf
    assert d["perplexity"] == math.inf and d["cross_entropy_nats"] == math.inf  # was OverflowError
    s = M.MetricSums(4)
    s.update([3], [800.0])  # a finite cross-entropy beyond exp's range
    assert s.perplexity == math.inf and M.merge_block_dicts([s.to_dict()])["perplexity"] == math.inf
    # NaN: no probability, and the played move ranks last (a NaN compared >= nothing: it was counted top-1)
    nan_row = np.array([[math.nan, 1.0, 2.0, math.nan]])
    r, n, _ = _score_everything(nan_row, np.array([0]))
    assert r.tolist() == [3] and n[0] == math.inf
    r, n, _ = _score_everything(nan_row, np.array([2]))
    assert r.tolist() == [0] and n[0] == pytest.approx(math.log1p(math.exp(-1.0)))
    # +inf: the +inf moves share the probability
    r, n, _ = _score_everything(np.array([[math.inf, 0.0, math.inf, -math.inf]]), np.array([0]))
    assert r.tolist() == [1] and n[0] == pytest.approx(math.log(2))
    r, n, _ = _score_everything(np.array([[math.inf, 0.0, 1.0, 2.0]]), np.array([0]))
    assert r.tolist() == [0] and n[0] == 0.0
    # every move -inf or NaN: nll inf, ranked last
    r, n, _ = _score_everything(np.array([[-math.inf, math.nan, -math.inf, -math.inf]]), np.array([2]))
    assert r.tolist() == [3] and n[0] == math.inf
    # non-finite values: mse NaN / inf, never a correct winner
    r, n, d = _score_everything(np.zeros((4, 4)), np.array([0, 1, 2, 3]),
                                value=np.array([math.nan, math.inf, 0.5, -math.inf]))
    assert math.isnan(d["value"]["mse"]) and d["value"]["winner_correct"] == 0
    # inf + -inf in an exact sum: NaN, not fsum's ValueError
    e = M.ExactSum()
    e.add([1e308, 1e308])
    assert e.value == math.inf
    e.add([-math.inf])
    assert math.isnan(e.value)
    assert math.isnan(M.fsum([math.inf, -math.inf])) and M.fsum([1e308, 1e308]) == math.inf


def test_metrics_survive_logits_of_extreme_values():
    """Every 4-move row drawn from the extreme values (with and without a mask): numbers, no exception, and the
    invariants hold (rank in range, nll >= 0 or NaN-free)."""
    import itertools

    rows = np.array(list(itertools.product(_EXTREME, repeat=3)), np.float64)
    z = np.concatenate([rows, np.zeros((len(rows), 1))], axis=1)  # the last move (pass) always finite
    for t in range(4):
        tt = np.full(len(z), t)
        legal = np.ones(z.shape, bool)
        legal[:, (t + 1) % 4] = False
        for mask in (None, legal):
            with np.errstate(over="raise", invalid="raise", divide="raise"):  # no floating-point warning either
                ranks, nll, d = _score_everything(z, tt, mask)
            assert ((ranks >= 0) & (ranks <= 3)).all()
            assert not np.isnan(nll).any() and (nll >= 0).all()
            assert d["count"] == 2 * len(z)  # single pass and ensemble
