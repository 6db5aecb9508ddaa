"""Ownership and score targets: per game in the games table, per row from the reader (9x9 games written here)."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from conftest import require_module, require_path

from kifunet.data_prep import results
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.building import build, filters, splits
from kifunet.data_prep.datasets import game_targets, shards, stats
from kifunet.data_prep.datasets.dataset import open_split
from kifunet.data_prep.datasets.dataset_base import DatasetError
from kifunet.data_prep.datasets.manifest import FORMAT_VERSION, MANIFEST, missing_ownership_targets
from kifunet.data_prep.datasets.reader import Reader
from kifunet.data_prep.datasets.shards import Storage
from kifunet.data_prep.rules import final_ownership
from kifunet.data_prep.sgf import sgf_io

# Black walls column d, white column f; column e is dame; a white stone at b5 (SGF "be") is dead in black's area.
_WALLS = "".join(f";B[d{r}];W[f{r}]" for r in "abcdefghi")
_END = ";B[];W[be];B[];W[]"
#: the final ownership from black's view: columns a-d black, e nobody, f-i white (the white stone at be is dead)
EXPECTED = np.array([[1, 1, 1, 1, 0, -1, -1, -1, -1]] * 9, np.int8)


def game(result: str, marks: str = "", name: str = "g") -> bytes:
    return (f"(;GM[1]FF[4]SZ[9]PB[{name}b]PW[{name}w]BR[5d]WR[5d]DT[2015-01-01]KM[0.5]RE[{result}]"
            f"{_WALLS}{_END}{marks})").encode()


KGS_MARKS = "TB[aa:ci]TW[ga:ii]"  # as KGS writes them: territory and dead stones' points, never live stones


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("own")
    files = {"marks.sgf": game("W+0.5", KGS_MARKS, "m"),
             "marked_dame.sgf": game("B+0.5", "TB[aa:ci][ea]TW[ga:ii]", "d"),
             "estimate.sgf": game("W+0.5", "", "e"),
             "resign.sgf": game("B+R", KGS_MARKS, "r"),
             "time.sgf": game("W+T", "", "t"),
             "beyond.sgf": game("B+90", "", "x")}  # a margin no 9x9 game can reach (81 points + komi 0.5)
    for k, v in files.items():
        (d / k).write_bytes(v)
    return d


def _build(inputs, out, **kw):
    cfg = build.BuildConfig(inputs=[str(inputs)], out=str(out), features="gonn",
                            filters=filters.Filters(board_size=9), splits=splits.make_rule(), seed=7,
                            storage=Storage(chunk_rows=32), shard_rows=400, unit_games=8, workers=0, progress=False,
                            **kw)
    build.build(cfg, log=lambda _m: None)
    return out


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    return _build(corpus, tmp_path_factory.mktemp("ds") / "d")


def _games(out) -> dict[str, dict]:
    g = shards.read_games_table(str(out / "train" / "games.h5"))
    return {p.rsplit("/", 1)[-1]: {k: v[i] for k, v in g.items()} for i, p in enumerate(g["path"])}


def test_the_sgf_reader_keeps_the_last_nodes_territory_marks():
    rec = sgf_io.load_game(game("W+0.5", KGS_MARKS))
    t = rec.territory.reshape(9, 9)
    assert (t[:, :3] == 1).all() and (t[:, 6:] == 2).all() and (t[:, 3:6] == 0).all()
    assert sgf_io.load_game(game("W+0.5")).territory is None
    assert sgf_io.load_game(game("W+0.5", "TB[zz]")).territory is None  # malformed: no marks, the game kept


def test_a_counted_game_with_marks_takes_them_and_the_estimate_agrees(built):
    g = _games(built)["marks.sgf"]
    assert final_ownership.SOURCES[g["ownership_source"]] == "marks"
    np.testing.assert_array_equal(g["ownership"].reshape(9, 9), EXPECTED)
    assert g["estimate_agreement"] == 81


def test_the_marks_decide_where_they_differ_from_the_estimate(built):
    g = _games(built)["marked_dame.sgf"]  # a dame point (e9) marked black
    own = g["ownership"].reshape(9, 9)
    assert own[0, 4] == 1 and own[1, 4] == 0
    assert g["estimate_agreement"] == 80


def test_a_counted_game_without_marks_takes_the_estimate_with_dame_at_zero(built):
    g = _games(built)["estimate.sgf"]
    assert final_ownership.SOURCES[g["ownership_source"]] == "estimate"
    np.testing.assert_array_equal(g["ownership"].reshape(9, 9), EXPECTED)  # b5 dead, column e dame
    assert g["estimate_agreement"] == -1


@pytest.mark.parametrize("name", ["resign.sgf", "time.sgf"])
def test_resignations_and_time_losses_have_no_targets(built, name):
    g = _games(built)[name]
    assert g["ownership_source"] == 0 and not g["ownership"].any() and g["estimate_agreement"] == -1
    r = Reader(str(built), "train").with_targets()
    b = r.batch(np.arange(len(r)))
    rows = b["game_index"] == list(_games(built)).index(name)
    assert rows.any() and (b["ownership_source"][rows] == 0).all() and np.isnan(b["score"][rows]).all()


def test_a_margin_beyond_the_board_has_no_score_target_but_keeps_its_winner(built):
    """KGS records hold margins no game reaches (``B+8194.00`` after 69 moves): the score target is masked, the
    value target and the ownership stay, and ``kifunet stats`` counts the game."""
    r = Reader(str(built), "train").with_targets()
    b = r.batch(np.arange(len(r)))
    rows = b["game_index"] == list(_games(built)).index("beyond.sgf")
    assert rows.any() and np.isnan(b["score"][rows]).all()
    np.testing.assert_array_equal(b["outcome"][rows], np.where(b["to_move"][rows] == 1, 1, -1))  # black won
    assert (b["ownership_source"][rows] > 0).all()
    text = stats.format_stats(stats.dataset_stats(str(built)))
    assert ("[train] score targets: 3 of 4 counted games; 1 masked, a margin beyond the board (9x9 points + komi)"
            in text)


@pytest.mark.parametrize("margin, komi, known", [(81.5, 0.5, True), (81.6, 0.5, False), (-81.5, -0.5, True),
                                                 (81.0, np.nan, True), (81.5, np.nan, False), (np.nan, 0.5, False)])
def test_a_score_target_is_known_up_to_every_point_plus_komi(margin, komi, known):
    kind = results.KIND_CODES["score"]
    assert game_targets.score_known(np.array([kind]), [margin], [komi], 9).tolist() == [known]
    assert not game_targets.score_known(np.array([results.KIND_CODES["resign"]]), [1.0], [0.5], 9).any()


def test_rows_are_seen_from_the_player_to_move(built):
    r = Reader(str(built), "train").with_targets()
    b = r.batch(np.arange(len(r)))
    index = list(_games(built))
    for name, margin in (("marks.sgf", -0.5), ("marked_dame.sgf", 0.5)):
        rows = b["game_index"] == index.index(name)
        side = np.where(b["to_move"][rows] == 1, 1, -1)
        np.testing.assert_array_equal(b["score"][rows], margin * side)
        np.testing.assert_array_equal(b["ownership"][rows][:, 0, 0], side)  # a1.. column a is black's
    assert "ownership" not in Reader(str(built), "train").batch([0])  # only when asked


def test_the_ownership_turns_with_the_planes_and_the_move(built):
    r = Reader(str(built), "train").with_targets()
    idx = np.arange(len(r))
    base = r.batch(idx)
    for s in range(8):
        b = r.batch(idx, symmetries=np.full(idx.size, s))
        np.testing.assert_array_equal(b["ownership"], sym.apply_planes_batch(base["ownership"], np.full(idx.size, s)))
        np.testing.assert_array_equal(b["planes"], sym.apply_planes_batch(base["planes"], np.full(idx.size, s)))
    # the dead-stone column's owner follows the board: columns a-d are the black player's in every symmetry
    b = r.batch(idx, symmetries=np.full(idx.size, 4))  # transpose: columns become rows
    black = b["to_move"] == 1
    assert (b["ownership"][black & (b["ownership_source"] > 0)][:, :4, :] == 1).all()


def test_a_build_with_every_symmetry_stores_rows_whose_ownership_matches_their_planes(corpus, tmp_path):
    plain = Reader(str(_build(corpus, tmp_path / "p")), "train").with_targets()
    every = Reader(str(_build(corpus, tmp_path / "a", symmetries="all")), "train").with_targets()
    a = plain.batch(np.arange(len(plain)))
    b = every.batch(np.arange(len(every)))
    key_a = {(int(g), int(m)): i for i, (g, m) in enumerate(zip(a["game_index"], a["move_number"]))}
    for j in range(len(every)):
        i = key_a[(int(b["game_index"][j]), int(b["move_number"][j]))]
        s = int(b["symmetry"][j])
        np.testing.assert_array_equal(b["planes"][j], sym.apply_planes(a["planes"][i], s))
        np.testing.assert_array_equal(b["ownership"][j], sym.apply_planes(a["ownership"][i][..., None], s)[..., 0])


def test_a_dataset_built_before_the_targets_reads_them_masked(built, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(built, old)
    table = old / "train" / "games.h5"
    with h5py.File(table, "a") as f:
        for k in ("ownership", "ownership_source", "estimate_agreement"):
            del f[k]
    man = json.loads((old / MANIFEST).read_text())
    man["splits"]["train"]["games_table_sha256"] = shards.sha256_file(str(table))
    man["format_version"] = 1
    man.pop("manifest_sha256")
    (old / MANIFEST).write_text(json.dumps(man))
    r = open_split(str(old), "train", targets=True)
    b = r.batch(np.arange(len(r)), symmetries=np.full(len(r), 3))
    new = Reader(str(built), "train").with_targets().batch(np.arange(len(r)), symmetries=np.full(len(r), 3))
    assert (b["ownership_source"] == 0).all() and not b["ownership"].any()
    np.testing.assert_array_equal(b["score"], new["score"])  # from RE, which every games table has
    np.testing.assert_array_equal(b["planes"], new["planes"])
    assert stats.dataset_stats(str(old))["splits"]["train"]["ownership"] is None
    # and an ownership head is refused on it in one line (the score from RE still trains)
    from pathlib import Path

    from kifunet.train import configs
    from kifunet.train.data import TrainData

    config = configs.load_file(str(Path(__file__).resolve().parents[1] / "train" / "configs" / "tiny.py"))
    why = r"old was built before ownership targets \(manifest format_version 1\)"
    with pytest.raises(configs.ConfigError, match=why):
        TrainData.open_datasets(str(old), "train", config.input).check_ownership_targets()
    TrainData.open_datasets(str(built), "train", config.input).check_ownership_targets()


@pytest.mark.parametrize("m, why", [
    ({"format_version": FORMAT_VERSION}, ""),
    ({"format_version": FORMAT_VERSION, "targets": True}, ""),
    ({"format_version": FORMAT_VERSION, "targets": False}, "was built with --no-targets"),
    ({"format_version": 1}, "was built before ownership targets (manifest format_version 1)"),
    ({}, "was built before ownership targets (manifest format_version 1)"),
])
def test_the_manifest_says_why_a_dataset_has_no_ownership_targets(m, why):
    """One home for the rule ``kifunet train`` and ``scripts/ingredients.py`` both apply."""
    assert missing_ownership_targets(m) == why


def test_stats_report_the_sources_and_the_estimates_agreement_with_the_marks(built):
    o = stats.dataset_stats(str(built))["splits"]["train"]["ownership"]
    assert o["games_by_source"] == {"none": 2, "marks": 2, "estimate": 2}
    assert o["marks_games"] == 2 and o["exact_games"] == 1 and o["points_agree"] == pytest.approx(161 / 162)
    text = stats.format_stats(stats.dataset_stats(str(built)))
    assert "2 games: exactly the same in 1 (50.0%), points 99.38%" in text


@pytest.mark.slow
def test_a_build_without_targets_keeps_everything_else_and_refuses_an_ownership_head(corpus, built, tmp_path, capsys):
    """``kifunet build --no-targets``: the same rows, planes, columns and scores as the build with targets, every
    ownership source ``none``, the manifest and ``kifunet stats`` say so, and a run with ``ownership_weight > 0`` on
    it is refused in one line (exit 2) before it trains."""
    from pathlib import Path

    from kifunet.cli import main

    out = tmp_path / "plain"
    assert main(["build", str(corpus), "--out", str(out), "--features", "gonn", "--board-size", "9", "--seed", "7",
                 "--chunk-rows", "32", "--shard-size", "400", "--unit-games", "8", "--workers", "0", "--no-progress",
                 "--no-targets"]) == 0
    assert json.loads((out / MANIFEST).read_text())["targets"] is False
    assert json.loads((built / MANIFEST).read_text())["targets"] is True
    plain, full = _games(out), _games(built)
    assert set(plain) == set(full) and all(g["ownership_source"] == 0 for g in plain.values())
    a, b = Reader(str(out), "train").with_targets(), Reader(str(built), "train").with_targets()
    rows = np.arange(len(a))
    ba, bb = a.batch(rows), b.batch(rows)
    for k in ("planes", "target", "score"):
        np.testing.assert_array_equal(ba[k], bb[k])
    assert not ba["ownership"].any() and bb["ownership"].any()
    assert stats.dataset_stats(str(out))["targets"] is False
    assert "[train] ownership targets: none (built with --no-targets)" in stats.format_stats(
        stats.dataset_stats(str(out)))
    capsys.readouterr()
    config = Path(__file__).resolve().parents[1] / "train" / "configs" / "ingredients.py"  # a GoNN net: the heads' keys
    assert main(["train", "--config", f"{config}", "--workdir", str(tmp_path / "run"), f"--config.dataset={out}",
                 "--config.model.kwargs.ownership_head=True", "--config.ownership_weight=1.5",
                 "--config.eval_split="]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "was built with --no-targets" in err[0] and str(out) in err[0], err


def test_a_tfds_split_refuses_targets_in_one_line():
    require_module("tensorflow_datasets")
    from kifunet.data_prep.datasets.tfds_reader import TfdsReader

    r = TfdsReader.__new__(TfdsReader)
    r.root = "/data/go_moves/x/1.3.0"
    with pytest.raises(DatasetError, match="no ownership or score targets"):
        r.with_targets()
    assert r.with_targets(False) is r and not r.targets


@pytest.mark.slow
def test_real_kgs_games_counted_and_resigned_and_the_estimate_against_kgss_marks(tmp_path):
    """KGS-2017_04 (913 games): 173 ended by counting, every one with KGS's TB/TW marks; the estimate gives the
    marks' ownership exactly in 158 (91.3%), 99.64% of the points (measured; tolerance 2 points of share). The
    2015 archive carries no TB/TW at all, so the agreement is measured on 2017."""
    from conftest import KGS_DIR

    arch = require_path(KGS_DIR / "KGS-2017_04-19-913-.tar.gz", "KGS-2017_04")
    cfg = build.BuildConfig(inputs=[str(arch)], out=str(tmp_path / "k"), features="agz",
                            splits=splits.make_rule(), workers=2, progress=False)
    build.build(cfg, log=lambda _m: None)
    s = stats.dataset_stats(str(tmp_path / "k"))["splits"]["train"]
    assert s["games_by_result"] == {"unknown": 13, "resign": 569, "score": 173, "time": 154, "forfeit": 4}
    o = s["ownership"]
    assert o["games_by_source"] == {"none": 740, "marks": 173, "estimate": 0}
    assert o["marks_games"] == 173
    assert 0.893 <= o["exact_games"] / o["marks_games"] <= 0.933  # 158 / 173 = 0.913 measured
    assert o["points_agree"] >= 0.994  # 0.9964 measured
    import tarfile

    with tarfile.open(require_path(KGS_DIR / "KGS-2015-19-8133-.tar.gz", "KGS-2015")) as tf:
        marked = sum(1 for m in tf if m.isfile() and (b"TB[" in tf.extractfile(m).read()
                                                       or b"TW[" in tf.extractfile(m).read()))
    assert marked == 0


@pytest.mark.slow
def test_a_run_with_both_heads_trains_and_show_prints_them(tmp_path, capsys):
    """8 steps of ``gonn_tiny`` with both heads on a 9x9 build with targets, then ``kifunet show`` of a position;
    unoptimised compiles (tests/model_helpers.py's, which once gave the score head's gradient NaN:
    docs/training.md, "The score head's NaN")."""
    import contextlib
    import io
    from pathlib import Path

    import jax

    from kifunet.cli import main
    from kifunet.train import configs
    from kifunet.train.train import train_and_evaluate

    d = tmp_path / "in"
    d.mkdir()
    for i, (res, marks) in enumerate([("W+0.5", "TB[aa:ci]TW[ga:ii]"), ("B+R", ""), ("B+3.5", "")]):
        (d / f"g{i}.sgf").write_bytes(game(res, marks, f"s{i}"))
    out = _build(d, tmp_path / "ds")
    tiny = Path(__file__).resolve().parents[1] / "train" / "configs" / "tiny.py"
    cfg = configs.load(str(tiny), [("dataset", str(out)), ("model.name", "gonn_tiny"), ("batch_size", "8"),
                                   ("eval_batch_size", "8"), ("train_positions", "64"),
                                   ("ownership_weight", "1.0"), ("score_weight", "0.1"), ("eval_split", ""),
                                   ("eval_every_positions", "0"), ("final_eval_positions", "0"),
                                   ("checkpoint_every_positions", "0"), ("async_checkpoints", "false")])
    with cfg.unlocked():
        cfg.model.kwargs.ownership_head = True
        cfg.model.kwargs.score_head = True
        cfg.input.window_blocks = 1
    run = tmp_path / "run"
    fast = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            final = train_and_evaluate(cfg, str(run))
    finally:
        jax.config.update("jax_disable_most_optimizations", fast)
    assert final["step"] == 8
    capsys.readouterr()
    assert main(["show", str(d / "g0.sgf"), "--move", "10", "--checkpoint", str(run),
                 "--out", str(tmp_path / "b.png")]) == 0
    shown = capsys.readouterr().out
    assert "ownership head: White (to move) owns" in shown and "score head:" in shown  # move 10 is White's
    white, black = float(shown.split("owns ")[1].split(" points")[0]), float(shown.split(", Black ")[1].split(" ")[0])
    assert white + black == pytest.approx(81, abs=0.2)  # each point's expected owner: the two add up to the board
