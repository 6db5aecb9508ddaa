"""The 60-minute KGS runs kept in the repository (pretrained/kgs_cpu_small, the first;
pretrained/kgs_cpu_default, the second; pretrained/kgs_cpu_default_ownership, the default net) load in a fresh
clone and are trained; each scores exactly its recorded figures on a fixed slice
of real KGS positions; their match games replay through ``kifunet build``; the manual's tables (docs/) are their
records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import KGS_2015, require_path

pytestmark = pytest.mark.slow  # loads and evaluates the 60-minute net

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "pretrained" / "kgs_cpu_small"
DEFAULT = REPO / "pretrained" / "kgs_cpu_default_ownership"
#: the hour-long KGS nets measured on the slice (each builds it with its config's ``expect_features``): the first
#: (maddison planes) and the default net. kgs_cpu_default, the second, has the default net's architecture and planes,
#: so measuring it too (98 s in CI) adds no code path; its record (its eval/kgs2015_0101_slice.json) stays, and
#: adding its name here measures it again.
HOUR_NETS = ("kgs_cpu_small", "kgs_cpu_default_ownership")
#: a net's figures on the slice (``RUN/eval/kgs2015_0101_slice.json``), measured by
#: test_the_pretrained_net_scores_its_recorded_figures_on_real_kgs itself (KIFUNET_RECORD=1 rewrites the file; the
#: commands are in it)
RECORDED = "kgs2015_0101_slice.json"
# the slice: every position of the KGS 2015 archive's games dated 2015-01-01 that the GoNN protocol keeps (the
# pretrained runs' test year); all of it is evaluated, so the sums do not depend on the build's row order
SLICE_BUILD = ["--preset", "gonn-kgs", "--split", "test:2015", "--date-from", "2015-01-01",
               "--date-to", "2015-01-01", "--workers", "0", "--no-progress"]
SLICE_EVAL = ["--split", "test", "--ensemble", "--batch-size", "256", "--cpu-devices", "1", "--no-breakdowns",
              "--no-progress"]


@pytest.fixture(scope="module")
def samples_ds(tmp_path_factory):
    from kifunet.cli import main

    out = tmp_path_factory.mktemp("pretrained") / "ds"
    assert main(["build", str(REPO / "samples" / "gnugo"), "--out", str(out), "--split", "train:rest",
                 "--workers", "0", "--no-progress"]) == 0
    return out


def test_the_pretrained_run_loads_without_its_dataset_and_predicts_moves(samples_ds):
    from kifunet.data_prep.datasets.reader import Reader
    from kifunet.eval.evaluate import evaluate
    from kifunet.eval.runs import load_run
    from kifunet.models import count_params

    pred = load_run(str(RUN))  # config.dataset (data/kgs_maddison) is not in a clone: the checkpoint says the shape
    assert (pred.feature_set, pred.board_size, pred.info["step"]) == ("maddison", 19, 19100)
    assert count_params(pred.model) == 103_954
    res = evaluate(pred, Reader(str(samples_ds), "train"), batch_size=256, limit=2048, progress=False)
    top1 = res["results"]["single"]["accuracy"]["1"]
    # GNU Go self-play is not KGS, but a trained net still finds many of its moves; an untrained one ~1/361
    assert top1 > 0.2, top1


def test_the_pretrained_net_plays_legal_moves_for_play():
    from kifunet.play.policy import load_policy

    pol = load_policy(RUN, rank="9d")
    p = pol.probabilities([(1, 3 * 19 + 15)], colour=2)  # white to move after black's Q16
    assert p.shape == (362,) and abs(float(p.sum()) - 1) < 1e-5
    # softmax over every point: the trained net has learned that the occupied point is never played
    assert p[3 * 19 + 15] < 1e-6 and np.argmax(p) != 3 * 19 + 15


def _figures(res: dict) -> dict:
    """The exact counts and the nats of an eval result (``kifunet eval --out`` JSON)."""
    out = {"games": res["dataset"]["spec"]["games"], "positions": res["dataset"]["spec"]["positions"]}
    for kind in ("single", "ensemble"):
        r = res["results"][kind]
        out[kind] = {"count": r["count"], "topk_correct": list(r["topk_correct"]), "nll_sum": r["nll_sum"],
                     "cross_entropy_nats": r["cross_entropy_nats"]}
    return out


#: How far the slice's figures may move from the recorded ones (benchmarks/bench_topk_spread.py; its figures in
#: benchmarks/results/topk_spread.json): float32 sums run in another order on another CPU model and turn near-ties
#: of the 8-symmetry ensemble. Measured against the records: on an Intel Xeon (2 cores, jax 0.10.2) the single pass
#: is exact; kgs_cpu_small's ensemble exact, and so under XLA_FLAGS=--xla_cpu_max_isa=AVX2 and with batches of 64
#: (neither reaches the convolutions' float order here); kgs_cpu_default's ensemble top-6..10 counts 3 lower, nats
#: 6.1e-9 lower. On an AMD EPYC (issue 32) a count 3 off (kgs_cpu_small) and 5 off (kgs_cpu_default). The real change
#: the test must catch, the ensemble with one of its 8 symmetries skipped, moves a top-k count by up to 19 in both
#: nets (top-1 by 5 and 11) and the ensemble nats by 2.7e-3 and 2.3e-3. So: counts within 10 (twice the largest
#: spread seen, 9 below the mutation), nats within 1e-5 (over 1,000 times the spread, 230 times below the mutation).
TOPK_TOLERANCE = 10
NATS_TOLERANCE = 1e-5


@pytest.mark.parametrize("net", HOUR_NETS)
def test_the_pretrained_net_scores_its_recorded_figures_on_real_kgs(net, tmp_path):
    """`kifunet build` of the slice with the net's feature set, then `kifunet eval` of the committed net on all of
    it (single pass and the 8-symmetry ensemble, one CPU device): the top-1..10 counts within ``TOPK_TOLERANCE`` of
    the recorded ones, the nats within ``NATS_TOLERANCE``. Measured (see the constants): across CPU models the
    counts moved by at most 5 and the nats by 7e-9; skipping one symmetry of the ensemble moves a count by 19 and
    the nats by 2.3e-3 or more, and fails both checks."""
    from kifunet.cli import main as cli_main

    archive = require_path(KGS_2015, "the real KGS 2015 archive")
    run = REPO / "pretrained" / net
    features = json.loads((run / "config.json").read_text())["expect_features"]
    build = ["--features", features, *SLICE_BUILD]
    ds = tmp_path / "slice"
    assert cli_main(["build", str(archive), "--out", str(ds), *build]) == 0
    out = tmp_path / "eval.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([sys.executable, "-m", "kifunet.cli", "eval", "--checkpoint", str(run), "--data", str(ds),
                        *SLICE_EVAL, "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = _figures(json.loads(out.read_text()))
    recorded = run / "eval" / RECORDED
    if os.environ.get("KIFUNET_RECORD") == "1":
        recorded.write_text(json.dumps({
            "what": f"kifunet eval of pretrained/{net} on every position of the KGS 2015 archive's games "
                    "dated 2015-01-01 kept by the GoNN protocol; checked by tests/test_pretrained.py::"
                    "test_the_pretrained_net_scores_its_recorded_figures_on_real_kgs",
            "build": "kifunet build ../shared/data/kgs/KGS-2015-19-8133-.tar.gz --out SLICE " + " ".join(build),
            "eval": f"kifunet eval --checkpoint pretrained/{net} --data SLICE " + " ".join(SLICE_EVAL),
            **got}, indent=1) + "\n")
    want = json.loads(recorded.read_text())
    assert (got["games"], got["positions"]) == (want["games"], want["positions"])
    for kind in ("single", "ensemble"):
        g, w = got[kind], want[kind]
        assert g["count"] == w["count"] == want["positions"], kind
        moved = [a - b for a, b in zip(g["topk_correct"], w["topk_correct"])]
        print(f"\n{net} {kind}: top-1..10 count - recorded {moved}, nats - recorded "
              f"{g['cross_entropy_nats'] - w['cross_entropy_nats']:.2e}")
        assert max(map(abs, moved)) <= TOPK_TOLERANCE, (kind, g["topk_correct"], w["topk_correct"])
        assert abs(g["cross_entropy_nats"] - w["cross_entropy_nats"]) <= NATS_TOLERANCE, kind
        assert abs(g["nll_sum"] - w["nll_sum"]) <= NATS_TOLERANCE * w["count"], kind
    # a trained net: far above the uniform guess, the ensemble above the single pass
    assert got["single"]["topk_correct"][0] > 0.35 * got["positions"]
    assert got["ensemble"]["topk_correct"][0] > got["single"]["topk_correct"][0]


#: every match kept in the repository: a directory of `kifunet match` (games/*.sgf, results.json)
KEPT_MATCHES = sorted(p.parent for p in (REPO / "pretrained").rglob("results.json") if (p.parent / "games").is_dir())


def test_the_kept_matches_are_found():
    names = {str(d.relative_to(REPO / "pretrained")) for d in KEPT_MATCHES}
    assert {"kgs_cpu_small/match-gnugo10", "kgs_cpu_default/match-gnugo10",
            "kgs_cpu_default_ownership/match-gnugo10"} <= names, names


@pytest.mark.parametrize("match_dir", KEPT_MATCHES, ids=lambda d: str(d.relative_to(REPO / "pretrained")))
def test_kept_match_games_replay_through_kifunet_build(match_dir, tmp_path):
    """docs/matches.md: every SGF of every kept match (the 50 against GNU Go level 10, the Pachi games, the rank
    experiment's) replays through `kifunet build` with 0 rejected (every move legal under the rules engine); their
    moves are the games' move counts and their number is the one in results.json."""
    from kifunet.cli import main as cli_main
    from kifunet.play.match_sgf import finished_games

    games = sorted((match_dir / "games").glob("*.sgf"))
    assert len(games) == json.loads((match_dir / "results.json").read_text())["games"] > 0
    out = tmp_path / "match"
    assert cli_main(["build", str(match_dir / "games"), "--out", str(out), "--features", "agz", "--board-size",
                     str(json.loads((match_dir / "match.json").read_text())["board_size"]), "--split", "train:rest",
                     "--no-dedupe", "--workers", "0", "--no-progress"]) == 0
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert (counts["seen"], counts["used"], counts["filtered"], counts["rejected"]) == \
        (len(games), len(games), {}, {})
    assert (out / "rejects.jsonl").read_text() == ""
    moves = sum(g.moves for g in finished_games(match_dir).values())
    assert counts["positions"]["moves"] == moves


def _readme_rows(header: str) -> list[list[str]]:
    """The rows of the table starting at ``header`` in the one page of the manual (docs/*.md) that holds it."""
    from docs_pages import page_holding

    _, text = page_holding(header)
    rows = []
    for line in text[text.index(header):].splitlines():
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [rows[0]] + rows[2:]


def _eval_cells(r: dict) -> list[str]:
    """One ``kifunet eval`` result as the manual's eval tables print it: top-1, 2, 4, 10 %, nats, perplexity."""
    return [f"{100 * r['accuracy'][k]:.2f}" for k in ("1", "2", "4", "10")] + \
        [f"{r['cross_entropy_nats']:.4f}", f"{r['perplexity']:.2f}"]


def _match_cells(res: dict) -> list[str]:
    """A match's results.json as the manual's match tables print it: games .. as white."""
    return [str(res["games"]), f"{res['engine_wins']:g}", f"{100 * res['win_rate']:.1f}%",
            f"{100 * res['ci_low']:.1f}-{100 * res['ci_high']:.1f}%",
            f"{res['as_black'][0]:g}/{res['as_black'][1]}", f"{res['as_white'][0]:g}/{res['as_white'][1]}"]


def _check_curve_table(run: Path, header: str, n: int) -> None:
    """The manual's learning-curve table starting at ``header`` is the run's metrics_eval.jsonl (n evaluations,
    10,000 test rows each and 100,000 at the end)."""
    evals = [json.loads(x) for x in (run / "metrics_eval.jsonl").read_text().splitlines() if x.strip()]
    table = {r[0]: r[1:] for r in _readme_rows(header)}
    assert len(table[header.strip("| ").split(" | ")[0]]) == len(evals) == n
    assert table["test top-1 %"] == [f"{100 * e['top1']:.2f}" for e in evals]
    assert table["test top-4 %"] == [f"{100 * e['top4']:.2f}" for e in evals]
    assert table["test nats"] == [f"{e['nats']:.3f}" for e in evals]
    assert [e["eval_positions"] for e in evals] == [10_000] * (n - 1) + [100_000]


def test_readme_tables_are_the_committed_records():
    """The manual's figures of the hour-long run (docs/evaluation.md, docs/runs.md) are its committed records,
    at the digits printed: the whole-split evaluation (eval/kgs_maddison_test.json, the net itself is measured
    above) and the learning curve (metrics_eval.jsonl)."""
    res = json.loads((RUN / "eval" / "kgs_maddison_test.json").read_text())
    assert res["results"]["single"]["count"] == res["results"]["ensemble"]["count"] == 954_187
    head, *rows = _readme_rows("| `cpu_small`, 60 min on 2 CPU cores |")
    assert [r[0] for r in rows] == ["single pass", "8-symmetry ensemble"]
    for row, kind in zip(rows, ("single", "ensemble")):
        assert row[1:] == _eval_cells(res["results"][kind]), (kind, row)
    _check_curve_table(RUN, "| positions | 250k |", 10)


def test_readme_rank_experiment_tables_are_the_committed_records():
    """The manual's rank-experiment tables (docs/matches.md) are pretrained/rank_experiment's results.json and
    eval files."""
    rank_dir = REPO / "pretrained" / "rank_experiment"
    head, *rows = _readme_rows("| told to play as | games |")
    assert [r[0] for r in rows] == ["1d", "5d", "9d"]
    for row in rows:
        res = json.loads((rank_dir / "match" / f"rank-{row[0]}" / "results.json").read_text())
        assert row[1:7] == _match_cells(res), row

    def figures(name):
        r = json.loads((rank_dir / "eval" / f"{name}.json").read_text())
        assert r["dataset"]["evaluated"] == 50_000
        s = r["results"]["single"]
        return f"{100 * s['accuracy']['1']:.2f}", f"{100 * s['accuracy']['4']:.2f}", f"{s['cross_entropy_nats']:.4f}"

    head, *rows = _readme_rows("| net | told | top-1 % |")
    assert rows[0][2:] == list(figures("base")) and rows[1][2:] == list(figures("cond"))
    for row in rows[2:]:
        told = row[1].split(" / ")
        got = [figures(f"cond_as_{t}") for t in told]
        assert row[2:] == [" / ".join(g[i] for g in got) for i in range(3)], row


def test_readme_strength_table_is_the_committed_records():
    """The manual's strength table (docs/matches.md) is the kept matches' results.json, at the digits printed;
    its second column names the net (a run under pretrained/) and how it played."""
    head, *rows = _readme_rows("| opponent (19x19, komi 7.5) | the net |")
    dirs = {"GNU Go 3.8 level 10": "match-gnugo10", "Pachi 11.99, 500 playouts (`pachi:500`)": "match-pachi500"}
    assert {r[0] for r in rows} == set(dirs)
    nets = [r[1].split("`")[1] for r in rows]
    assert {"kgs_cpu_small", "kgs_cpu_default", "kgs_cpu_default_ownership"} <= set(nets), nets
    for row, net in zip(rows, nets):
        res = json.loads((REPO / "pretrained" / net / dirs[row[0]] / "results.json").read_text())
        assert row[2:8] == _match_cells(res), row


#: the two hour-long gonn_resnet5 nets: (run, parameters, has an ownership head, the manual's table headers)
CPU_DEFAULTS = (("kgs_cpu_default", 166_536, False, "`cpu_default`"),
                ("kgs_cpu_default_ownership", 166_585, True, "`cpu_default` + ownership head"))


def test_the_default_net_is_the_one_with_the_ownership_head():
    from kifunet.data_prep import paths

    assert paths.default_net() == DEFAULT


@pytest.mark.parametrize("net,params,ownership,_", CPU_DEFAULTS)
def test_the_default_nets_load_without_their_dataset_and_play(net, params, ownership, _):
    """pretrained/kgs_cpu_default and kgs_cpu_default_ownership (3 x 48 GoNN ResNets, gonn planes; the second the
    default net) load from their checkpoint's metadata alone, at their final step, and predict real moves."""
    from kifunet.eval.runs import load_run
    from kifunet.models import count_params
    from kifunet.play.policy import load_policy

    run = REPO / "pretrained" / net
    pred = load_run(str(run))  # config.dataset (data/kgs_gonn) is not in a clone
    cfg = json.loads((run / "config.json").read_text())
    steps = -(-cfg["train_positions"] // cfg["batch_size"])
    assert (pred.feature_set, pred.board_size, pred.info["step"]) == ("gonn", 19, steps)
    assert count_params(pred.model) == params
    pol = load_policy(run, rank="9d")
    assert pol.has_ownership is ownership
    p = pol.probabilities([(1, 3 * 19 + 15), (2, 15 * 19 + 3)], colour=1)  # black to move after Q16, D4
    assert p.shape == (362,) and abs(float(p.sum()) - 1) < 1e-5
    assert max(p[3 * 19 + 15], p[15 * 19 + 3]) < 1e-6
    # a trained net opens on the 3-4 and 4-4 points of the empty corners, not in the centre
    top = int(np.argmax(p))
    assert min(top // 19, 18 - top // 19) in (2, 3) and min(top % 19, 18 - top % 19) in (2, 3), top


@pytest.mark.parametrize("net,_,__,name", CPU_DEFAULTS)
def test_readme_default_net_tables_are_its_committed_records(net, _, __, name):
    """The manual's figures of the default nets (docs/runs.md) are their committed records at the
    digits printed: the whole-split single pass and the ensemble on the split's first 100,000 rows (both
    ``kifunet eval`` JSON), and the learning curve (metrics_eval.jsonl)."""
    run = REPO / "pretrained" / net
    whole = json.loads((run / "eval" / "kgs_gonn_test.json").read_text())
    first = json.loads((run / "eval" / "kgs_gonn_test_first100000.json").read_text())
    assert whole["results"]["single"]["count"] == 954_190 and "ensemble" not in whole["results"]
    assert first["results"]["single"]["count"] == first["results"]["ensemble"]["count"] == 100_000
    head, *rows = _readme_rows(f"| {name}, 60 min on 2 CPU cores |")
    cases = [("single pass, whole split", whole, "single"), ("single pass, first 100,000 rows", first, "single"),
             ("8-symmetry ensemble, first 100,000 rows", first, "ensemble")]
    assert [r[0] for r in rows] == [c[0] for c in cases]
    for row, (_, res, kind) in zip(rows, cases):
        assert row[1:] == _eval_cells(res["results"][kind]), (kind, row)
    _check_curve_table(run, f"| positions ({name}) |", 6)


#: the two-domain table's rows of each hour-long net (docs/evaluation.md, copied into the README): eval column ->
#: (its KGS eval JSON, its Fox eval JSON, which pass)
_GONN_EVALS = {"single pass": ("kgs_gonn_test", "fox_pro_gonn_test", "single"),
               "8-symmetry ensemble, first 100,000 rows": ("kgs_gonn_test_first100000",
                                                           "fox_pro_gonn_test_first100000", "ensemble")}
TWO_DOMAIN = {"kgs_cpu_small": {"single pass": ("kgs_maddison_test", "fox_pro_test", "single"),
                                "8-symmetry ensemble": ("kgs_maddison_test", "fox_pro_test", "ensemble")},
              "kgs_cpu_default": _GONN_EVALS, "kgs_cpu_default_ownership": _GONN_EVALS}


def test_the_two_domain_table_is_the_committed_records():
    """docs/evaluation.md's two-domain rows of our nets are their eval JSON at the digits printed: KGS and pro
    top-1, their difference (of the printed figures), KGS and pro nats."""
    from docs_pages import page

    rows = [[c.strip() for c in x.strip().strip("|").split("|")] for x in page("evaluation").splitlines()
            if x.startswith("| **ours: `")]
    assert {(r[0].split("`")[1], r[2]) for r in rows} == {(n, e) for n, d in TWO_DOMAIN.items() for e in d}
    for row in rows:
        net = row[0].split("`")[1]
        kgs, fox, kind = TWO_DOMAIN[net][row[2]]
        k, f = (json.loads((REPO / "pretrained" / net / "eval" / f"{n}.json").read_text())["results"][kind]
                for n in (kgs, fox))
        top1 = [f"{100 * r['accuracy']['1']:.2f}" for r in (k, f)]
        want = [*top1, f"{float(top1[1]) - float(top1[0]):.2f}", f"{k['cross_entropy_nats']:.4f}",
                f"{f['cross_entropy_nats']:.4f}"]
        assert row[3:] == want, (row, want)


QIQIAO = REPO / "pretrained" / "qiqiao9x9"


def test_the_pretrained_9x9_net_loads_and_plays_with_its_value_head():
    """pretrained/qiqiao9x9 (the Qiqiao net trained on corpora/engine9x9) loads in a clone and plays 9x9 moves;
    its value head says who is ahead in a position where black has the whole board."""
    from kifunet.models import count_params
    from kifunet.play.policy import load_policy

    pol = load_policy(QIQIAO)
    assert pol.board_size == 9 and count_params(pol.model) == 333_951 and pol.has_value
    probs = pol.probabilities([(1, 40)], colour=2)  # white to move after black's E5
    assert probs.shape == (82,) and probs[40] < 0.01 and abs(float(probs.sum()) - 1) < 1e-5
    # a black wall on the third line and a white one on the second: black has 63 points by area, white 18
    setup = [(1, 6 * 9 + c) for c in range(9)] + [(2, 7 * 9 + c) for c in range(9)]
    _, v_black = pol.evaluate([], colour=1, setup=setup)
    _, v_white = pol.evaluate([], colour=2, setup=setup)
    assert v_black > 0 > v_white and v_black - v_white > 0.3, (v_black, v_white)  # measured: 0.137, -0.343


def test_readme_qiqiao_tables_are_the_committed_records():
    """The manual's 9x9 tables (docs/training.md: Qiqiao 9x9; docs/matches.md: Strength) are
    pretrained/qiqiao9x9's eval JSON and its kept matches' results.json, at the digits printed."""
    res = json.loads((QIQIAO / "eval" / "engine9x9_test.json").read_text())
    head, *rows = _readme_rows("| `qiqiao` on corpora/engine9x9 |")
    assert [r[0] for r in rows] == ["single pass", "8-symmetry ensemble"]
    for row, kind in zip(rows, ("single", "ensemble")):
        r = res["results"][kind]
        v = r["value"]
        want = [f"{100 * r['accuracy']['1']:.2f}", f"{100 * r['accuracy']['4']:.2f}", f"{r['cross_entropy_nats']:.4f}",
                f"{v['mse']:.4f}", f"{v['baseline_mse']:.4f}", f"{100 * v['winner_accuracy']:.2f}"]
        assert row[1:] == want, (kind, row, want)
    head, *rows = _readme_rows("| opponent (9x9, komi 7) | the net |")
    assert rows
    for row in rows:
        level = row[0].rsplit(" ", 1)[-1]
        res = json.loads((QIQIAO / f"match-gnugo{level}" / "results.json").read_text())
        want = [str(res["games"]), f"{res['engine_wins']:g}", f"{100 * res['win_rate']:.1f}%",
                f"{100 * res['ci_low']:.1f}-{100 * res['ci_high']:.1f}%",
                f"{res['as_black'][0]:g}/{res['as_black'][1]}", f"{res['as_white'][0]:g}/{res['as_white'][1]}"]
        assert row[2:8] == want, (row, want)


def test_the_engine_scores_every_game_it_ends_on_the_board_as_the_referee_does():
    """docs/matches.md (issue 48): in the 20-game match against GNU Go level 10 with GNU Go as referee, every game
    that ended by two passes carries the engine's own final_score, and it names the referee's winner."""
    match_dir = REPO / "pretrained" / "kgs_cpu_default" / "match-gnugo10-referee"
    results = json.loads((match_dir / "results.json").read_text())
    on_board = [p for p in sorted((match_dir / "games").glob("*.sgf")) if "+R]" not in p.read_text()]
    assert len(on_board) == results["ended"]["two passes"] == 11
    for p in on_board:
        text = p.read_text()
        assert "agrees with the referee on the winner" in text and "winner differs" not in text, p.name
