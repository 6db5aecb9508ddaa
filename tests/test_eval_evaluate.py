"""eval/evaluate.py and eval/legality.py on a tiny dataset built from the sample corpus.

The symmetry directions and the whole-split sums are checked with tiny hand-made nets whose outputs are known
in closed form (a 1x1 'plane weighting' net, with and without a per-point bias); one test runs a real
``maddison_tiny`` model through the same path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from flax import nnx

from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.datasets.reader import Reader
from kifunet.eval import metrics as M
from kifunet.eval.evaluate import Predictor, dataset_spec, evaluate, format_result, with_player_rank
from kifunet.eval.legality import LegalMasker, ReplayLegality
from kifunet.models.forward import NetFacts, Outputs

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "gnugo"


def build(out: Path, features: str, games=range(5), extra=()) -> Path:
    from kifunet.cli import main

    files = [str(SAMPLES / f"gnugo-{i:04d}.sgf") for i in games]
    rc = main(["build", *files, "--out", str(out), "--features", features, "--hash-split", "test:0.4",
               "--workers", "0", "--no-progress", *extra])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def maddison_ds(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("ds") / "maddison", "maddison")


class PlaneNet(nnx.Module):
    """logits[k] = w . planes[k] (+ bias[k] when ``biased``); pass gets ``pass_logit``. Testing only."""

    def __init__(self, board_size, in_planes, *, biased=False, seed=0, pass_logit=-1e9):
        rng = np.random.default_rng(seed)
        self.board_size, self.in_planes = board_size, in_planes
        self.w = nnx.Param(np.asarray(rng.normal(size=in_planes), np.float32))
        self.bias = nnx.Param(np.asarray(rng.normal(size=board_size * board_size) * (2.0 if biased else 0.0),
                                         np.float32))
        self.pass_logit = pass_logit

    @property
    def facts(self):
        return NetFacts(board_size=self.board_size, in_planes=self.in_planes, has_value=False,
                        has_pass=self.pass_logit > -1e8, reads_rank=False, reads_profile=False, resizable=False)

    def __call__(self, planes, rank=None, to_move=None, profile=None):
        import jax.numpy as jnp

        x = jnp.asarray(planes).astype(jnp.float32)
        b = x.shape[0]
        z = jnp.einsum("bhwc,c->bhw", x, self.w[...]).reshape(b, -1) + self.bias[...]
        return Outputs(jnp.concatenate([z, jnp.full((b, 1), self.pass_logit, jnp.float32)], axis=1))


def _predictor(ds: Path, *, biased=False):
    r = Reader(str(ds), "test")
    net = PlaneNet(r.board_size, r.feature_set.num_planes, biased=biased)
    return r, Predictor(net, r.feature_name, info={"name": "planenet", "model": "PlaneNet", "params": 0})


def test_symmetry_passes_are_mapped_back(maddison_ds):
    r, p = _predictor(maddison_ds)
    batch = r.batch(np.arange(7))
    single = p.predict(batch)
    for out in p.predict_symmetries(batch):  # an equivariant net: every pass maps back onto the single pass
        np.testing.assert_allclose(out, single, rtol=1e-6, atol=1e-5)
    r, p = _predictor(maddison_ds, biased=True)
    base = p.predict(dict(batch))  # w . planes + bias
    bias = np.asarray(p.model.bias[...])
    n = r.board_size
    outs = p.predict_symmetries(batch)
    for s, out in enumerate(outs):
        # on the transformed board, point k's content sits at apply_index(k, s) and meets that point's bias
        moved_bias = bias[sym.apply_index(np.arange(n * n), s, n)]
        np.testing.assert_allclose(out[:, : n * n], base[:, : n * n] - bias + moved_bias, rtol=1e-5, atol=1e-4)
    assert not np.allclose(outs[5], outs[0])


def _brute(logits, target):
    ranks = np.array([sum(1 for j, v in enumerate(row) if j != t and v >= row[t]) for row, t in zip(logits, target)])
    z = logits.astype(np.float64)
    lse = z.max(1) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1))
    return ranks, lse - z[np.arange(len(target)), target]


def test_evaluate_equals_brute_force_with_a_ragged_last_batch(maddison_ds):
    r, p = _predictor(maddison_ds, biased=True)
    rows = len(r)
    assert rows % 64 != 0  # the last batch is ragged
    all_rows = r.batch(np.arange(rows))
    ranks, nll = _brute(p.predict(all_rows), all_rows["target"].astype(np.int64))
    results = {bs: evaluate(p, r, batch_size=bs, progress=False) for bs in (64, 1000)}
    for res in results.values():
        s = res["results"]["single"]
        assert s["count"] == rows == res["dataset"]["evaluated"]
        assert s["topk_correct"] == [int((ranks < k).sum()) for k in range(1, 11)]
        assert s["nll_sum"] == pytest.approx(nll.sum(), rel=1e-9)
        assert s["cross_entropy_nats"] == pytest.approx(nll.mean(), rel=1e-9)
        assert s["perplexity"] == pytest.approx(np.exp(nll.mean()), rel=1e-9)
        assert np.bincount(ranks, minlength=362).tolist() == s["rank_histogram"]
        assert "ensemble" not in res["results"]
    # breakdowns partition the split: check the groups against the dataset's own columns
    s = results[64]["results"]["single"]
    mn = all_rows["move_number"]
    assert s["by_phase"]["1-20"]["count"] == int(((mn >= 1) & (mn <= 20)).sum())
    assert s["by_colour"]["black"]["count"] == int((all_rows["to_move"] == 1).sum())
    for part in ("by_phase", "by_rank", "by_colour"):
        assert sum(v["count"] for v in s[part].values()) == rows
    text = format_result(results[64])
    assert "single pass" in text and "by move number" in text and "8-symmetry" not in text


def test_parts_of_a_split_merge_into_the_whole(maddison_ds, tmp_path):
    from kifunet.cli import main
    from kifunet.eval.evaluate import load_result, merge_results, save_result

    r, p = _predictor(maddison_ds, biased=True)
    rows = len(r)
    whole = evaluate(p, r, batch_size=64, ensemble=True, progress=False)
    cut = [0, 37, 150, rows]  # ragged parts, out of order below
    parts = [evaluate(p, r, batch_size=64, ensemble=True, start=a, limit=b - a, progress=False)
             for a, b in zip(cut, cut[1:])]
    assert [x["dataset"]["ranges"] for x in parts] == [[[a, b]] for a, b in zip(cut, cut[1:])]
    merged = merge_results(parts[::-1])
    assert merged["dataset"]["ranges"] == [[0, rows]] and merged["dataset"]["evaluated"] == rows
    assert merged["settings"]["limit"] is None
    for mode in ("single", "ensemble"):
        w, m = whole["results"][mode], merged["results"][mode]
        for block_w, block_m in [(w, m)] + [(w[g][k], m[g][k]) for g in ("by_phase", "by_rank", "by_colour")
                                             for k in w[g]]:
            assert block_m["count"] == block_w["count"] and block_m["topk_correct"] == block_w["topk_correct"]
            assert block_m["nll_sum"] == pytest.approx(block_w["nll_sum"], rel=1e-12)
            assert block_m["accuracy"] == pytest.approx(block_w["accuracy"])
        assert list(m["by_phase"]) == list(w["by_phase"]) and list(m["by_rank"]) == list(w["by_rank"])
        assert m["rank_histogram"] == w["rank_histogram"]
    with pytest.raises(ValueError, match="overlap"):
        merge_results([parts[0], evaluate(p, r, batch_size=64, ensemble=True, start=20, limit=40, progress=False)])
    with pytest.raises(ValueError, match="settings"):
        merge_results([parts[0], evaluate(p, r, batch_size=64, start=37, limit=10, progress=False)])
    # the command line: --merge of saved parts prints and writes the merged result
    files = []
    for i, part in enumerate(parts[:2]):
        files.append(str(tmp_path / f"part{i}.json"))
        save_result(part, files[-1])
    assert main(["eval", "--merge", *files, "--out", str(tmp_path / "m.json")]) == 0
    assert load_result(str(tmp_path / "m.json"))["dataset"]["ranges"] == [[0, 150]]


def test_ensemble_is_reported_apart_and_by_hand(maddison_ds):
    r, p = _predictor(maddison_ds, biased=True)
    res = evaluate(p, r, batch_size=100, ensemble=True, limit=150, progress=False)
    single_only = evaluate(p, r, batch_size=100, limit=150, progress=False)
    assert res["results"]["single"] == single_only["results"]["single"]
    batch = r.batch(np.arange(150))
    lp = M.ensemble_log_probs(p.predict_symmetries(batch))
    ranks, nll = M.example_stats(lp, batch["target"].astype(np.int64))
    e = res["results"]["ensemble"]
    assert e["count"] == 150
    assert e["topk_correct"] == [int((ranks < k).sum()) for k in range(1, 11)]
    assert e["nll_sum"] == pytest.approx(nll.sum(), rel=1e-9)
    assert e["nll_sum"] != pytest.approx(res["results"]["single"]["nll_sum"], rel=1e-3)
    assert "8-symmetry ensemble" in format_result(res)
    assert res["settings"]["ensemble_rule"].startswith("mean of the 8")


def test_legality_from_planes_equals_replay(maddison_ds, tmp_path):
    r = Reader(str(maddison_ds), "test")
    batch = r.batch(np.arange(len(r)))
    planes_mask = M.legal_from_planes(batch["planes"], r.feature_set)
    replay_mask = ReplayLegality(r).mask(batch)
    assert planes_mask.shape == (len(r), 362)
    np.testing.assert_array_equal(planes_mask, replay_mask)
    assert planes_mask[np.arange(len(r)), batch["target"]].all()  # every played move is legal
    stones = batch["planes"][..., :2].any(-1).reshape(len(r), -1)
    assert not (planes_mask[:, :361] & stones).any()  # occupied points are illegal
    # alphago has no legal plane: its liberties-after buckets carry legality; gonn needs the replay
    ag = Reader(str(build(tmp_path / "alphago", "alphago")), "test")
    b = ag.batch(np.arange(len(ag)))
    np.testing.assert_array_equal(M.legal_from_planes(b["planes"], ag.feature_set), ReplayLegality(ag).mask(b))
    assert LegalMasker(ag).source == "planes"
    gonn = Reader(str(build(tmp_path / "gonn", "gonn")), "test")
    masker = LegalMasker(gonn)
    assert masker.source == "replay"
    gb = gonn.batch(np.arange(len(gonn)))
    assert masker(gb)[np.arange(len(gonn)), gb["target"]].all()
    # same games, same order of rows within the split: the gonn replay mask equals the maddison one row by row
    key = lambda bb: {(int(g), int(m)): i for i, (g, m) in enumerate(zip(bb["game_index"], bb["move_number"]))}
    km, kg = key(batch), key(gb)
    assert km.keys() == kg.keys()
    idx_m = [km[k] for k in sorted(km)]
    idx_g = [kg[k] for k in sorted(kg)]
    np.testing.assert_array_equal(planes_mask[idx_m], masker(gb)[idx_g])


def test_legal_mask_never_hurts_and_is_recorded(maddison_ds):
    r, p = _predictor(maddison_ds, biased=True)
    plain = evaluate(p, r, batch_size=128, progress=False)["results"]["single"]
    res = evaluate(p, r, batch_size=128, legal_mask=True, progress=False)
    masked = res["results"]["single"]
    assert res["settings"]["legal_mask"] is True and res["settings"]["legal_source"] == "planes"
    assert all(a >= b for a, b in zip(masked["topk_correct"], plain["topk_correct"]))
    assert masked["topk_correct"][0] > plain["topk_correct"][0]  # a random net puts mass on stones
    assert masked["nll_sum"] < plain["nll_sum"]


def test_with_player_rank_rewrites_rank_planes(maddison_ds):
    r = Reader(str(maddison_ds), "test")
    b = r.batch(np.arange(4))
    fs = r.feature_set
    names = fs.plane_names()
    k = [i for i, nm in enumerate(names) if nm.startswith("rank_dan_9")]
    for rank, plane in ((0, 0), (8, 8), (12, 8)):  # 1d, 9d, and a pro (shown as 9d by Maddison's planes)
        out = with_player_rank(b, rank, fs)
        assert (out["player_rank"] == rank).all()
        rp = out["planes"][..., k]
        assert (rp[..., plane] == 1).all() and rp.sum() == 4 * 19 * 19
        others = [i for i in range(len(names)) if i not in k]
        np.testing.assert_array_equal(out["planes"][..., others], b["planes"][..., others])
    assert with_player_rank(b, -5, fs)["planes"][..., k].sum() == 0  # kyu players: no rank plane


def test_dataset_spec_names_filters_and_split(maddison_ds, tmp_path):
    r = Reader(str(maddison_ds), "test")
    spec = dataset_spec(r.manifest, "test")
    assert spec["games"] == r.manifest["splits"]["test"]["games"] and spec["positions"] == len(r)
    assert "game-hash fraction 0.4 of train" in spec["split_rule"]
    assert "handicap games kept" in spec["filters"] and "passes dropped" in spec["filters"]
    assert spec["features"] == "maddison v1 (36 planes)"
    assert spec["text"].startswith("gnugo-0000.sgf, gnugo-0001.sgf, gnugo-0002.sgf +2 more")
    from kifunet.cli import main
    from kifunet.data_prep.datasets.manifest import read_manifest

    out = tmp_path / "gonn_kgs"
    assert main(["build", str(SAMPLES), "--out", str(out), "--preset", "gonn-kgs", "--workers", "0",
                 "--no-progress"]) == 0
    g = dataset_spec(read_manifest(str(out)), "test")
    assert g["preset"] == "gonn-kgs"
    assert "no handicap" in g["filters"] and "games with both >= 6d or one >= 7d" in g["filters"]
    assert "moves by >= 6d" in g["filters"] and "test: dates 2015" in g["split_rule"]


def test_real_model_and_feature_mismatch(maddison_ds):
    from kifunet import models

    r = Reader(str(maddison_ds), "test")
    model = models.create("maddison_tiny", board_size=19, rngs=nnx.Rngs(0))
    p = Predictor(model, "maddison", info={"name": "tiny", "model": "maddison_tiny"})
    assert p.info["params"] == models.count_params(model) > 0
    res = evaluate(p, r, batch_size=32, ensemble=True, limit=40, progress=False)
    for mode in ("single", "ensemble"):
        b = res["results"][mode]
        assert b["count"] == 40 and 0 <= b["topk_correct"][0] <= b["topk_correct"][9] <= 40
        assert np.isfinite(b["cross_entropy_nats"]) and b["cross_entropy_nats"] > 0
    with pytest.raises(ValueError, match="planes"):
        Predictor(models.create("maddison_tiny", board_size=19, in_planes=48, rngs=nnx.Rngs(0)), "maddison")
    ag = PlaneNet(19, 48)
    with pytest.raises(ValueError, match="feature set maddison"):
        evaluate(Predictor(ag, "alphago", info={"params": 0}), r, progress=False)


def test_replay_legality_reads_games_of_an_sgf_collection(tmp_path):
    """A collection file's later trees are records named FILE#k: the replay mask finds them (and equals the
    maddison legal plane of the same positions)."""
    from kifunet.cli import main

    coll = tmp_path / "in" / "two.sgf"
    coll.parent.mkdir()
    coll.write_bytes(b"\n".join((SAMPLES / f"gnugo-{i:04d}.sgf").read_bytes().strip() for i in (0, 1)))
    for feat in ("maddison", "gonn"):
        assert main(["build", str(coll.parent), "--out", str(tmp_path / feat), "--features", feat,
                     "--split", "train:rest", "--workers", "0", "--no-progress"]) == 0
    mad, gonn = Reader(str(tmp_path / "maddison"), "train"), Reader(str(tmp_path / "gonn"), "train")
    assert sorted(Path(p).name for p in gonn.games()["path"]) == ["two.sgf", "two.sgf#2"]
    bm, bg = mad.batch(np.arange(len(mad))), gonn.batch(np.arange(len(gonn)))
    np.testing.assert_array_equal(M.legal_from_planes(bm["planes"], mad.feature_set), ReplayLegality(gonn).mask(bg))


def test_as_rank_tells_the_net_one_rank_and_keeps_the_real_ranks_in_the_breakdown(maddison_ds):
    r, p = _predictor(maddison_ds)
    plain = evaluate(p, r, batch_size=16, progress=False)
    told = {rank: evaluate(p, r, batch_size=16, progress=False, as_rank=rank) for rank in (0, 8)}
    # the plane net weighs Maddison's rank planes: 1d and 9d give different predictions, each its own setting
    assert told[0]["results"]["single"]["nll_sum"] != told[8]["results"]["single"]["nll_sum"]
    assert told[8]["settings"]["as_rank"] == 8 and plain["settings"]["as_rank"] is None
    # the same as rewriting every batch by hand
    rows = np.arange(len(r))
    manual = p.predict(with_player_rank(r.batch(rows), 8, r.feature_set))
    nll = -np.take_along_axis(manual - np.log(np.exp(manual - manual.max(1, keepdims=True)).sum(1, keepdims=True))
                              - manual.max(1, keepdims=True), r.batch(rows)["target"][:, None].astype(int), 1).sum()
    assert np.isclose(told[8]["results"]["single"]["nll_sum"], nll, rtol=1e-4)
    groups = lambda res: {k: v["count"] for k, v in res["results"]["single"]["by_rank"].items()}  # noqa: E731
    assert groups(told[8]) == groups(plain) and len(groups(plain)) >= 1  # the movers' real ranks
    assert "told every mover is 9d" in format_result(told[8], breakdowns=False)


@pytest.mark.slow
def test_a_rank_embedding_net_evaluates_on_two_devices(maddison_ds):
    """``kifunet eval`` splits batches over one JAX device per core: a net with a rank embedding (a gather of the
    batch's ranks) must run there too, and agree with one device."""
    import os
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(f"""
        import jax, numpy as np
        from flax import nnx
        from kifunet import models
        from kifunet.data_prep.datasets.reader import Reader
        from kifunet.eval.evaluate import Predictor
        r = Reader({str(maddison_ds)!r}, "test")
        net = models.create("maddison_tiny", in_planes=r.feature_set.num_planes, rank_embedding=True,
                            rngs=nnx.Rngs(0))
        p = Predictor(net, r.feature_name)
        out = p.predict(r.batch(np.arange(6)), pad_to=8)
        np.save(__import__("sys").argv[1], out)
        print(p.devices)
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=2")
    target = maddison_ds.parent / "logits2.npy"
    p = subprocess.run([sys.executable, "-c", child, str(target)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout.split()[-1] == "2", p.stderr[-3000:]
    # the same net on this process's one device
    from kifunet import models

    r = Reader(str(maddison_ds), "test")
    net = models.create("maddison_tiny", in_planes=r.feature_set.num_planes, rank_embedding=True, rngs=nnx.Rngs(0))
    one = Predictor(net, r.feature_name)
    assert one.devices == 1
    np.testing.assert_allclose(np.load(target), one.predict(r.batch(np.arange(6)), pad_to=8), rtol=1e-5, atol=1e-5)
