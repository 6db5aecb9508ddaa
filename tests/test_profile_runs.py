"""scripts/profile_runs.py (issue 33's joint experiment): the arms differ only in their data and the profile input,
their commands are valid configs, and the table reads kept results (fixtures written here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import profile_runs as pr  # noqa: E402


def _config(name):
    from kifunet.train import configs

    cmd = pr.train_command(name, Path("data"))
    overrides, rest = configs.parse_overrides(cmd[cmd.index(pr.CONFIG) + 1:])
    assert rest == ["--workdir", f"runs/profiles/{name}"]
    return configs.load(str(REPO / pr.CONFIG), overrides)


VARIED = {"dataset", "seed", "model.profile_embedding", "input.mix_weights"}


def _flat(d: dict, drop: set, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, drop, f"{prefix}{k}."))
        elif f"{prefix}{k}" not in drop:
            out[f"{prefix}{k}"] = v
    return out


def test_arms_differ_only_in_data_profile_and_seed():
    base = _config("kgs").to_dict()
    for name, arm in pr.ARMS.items():
        cfg = _config(name).to_dict()
        assert cfg["dataset"] == ",".join(f"data/{pr.DOMAINS[d]}" for d in arm.domains)
        assert cfg["model"]["profile_embedding"] == (pr.PROFILE_WIDTH if name.startswith("joint_profile") else 0)
        assert cfg["seed"] == (1 if name.endswith("_seed1") else base["seed"])
        assert cfg["input"]["mix_weights"] == ("1,1" if len(arm.domains) == 2 else "")
        assert cfg["train_positions"] == base["train_positions"]  # equal compute
        assert _flat(cfg, VARIED) == _flat(base, VARIED), name
    assert {p for pair in pr.SEED_PAIRS for p in pair} == set(pr.ARMS)


def _keep(root: Path, name: str, kgs: tuple[float, float], fox: tuple[float, float]) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "arm.json").write_text(json.dumps({"arm": name, "change": pr.ARMS[name].change}))
    for domain, (top1, nats) in (("kgs", kgs), ("fox", fox)):
        single = {"count": 1000, "accuracy": {"1": top1}, "cross_entropy_nats": nats}
        (d / f"eval_{domain}.json").write_text(json.dumps({"results": {"single": single}}))


def test_table_of_kept_arms_with_seed_means_and_spreads(tmp_path):
    _keep(tmp_path, "kgs", (0.40, 2.30), (0.30, 2.80))
    _keep(tmp_path, "kgs_seed1", (0.42, 2.20), (0.31, 2.70))
    _keep(tmp_path, "joint_profile", (0.41, 2.25), (0.36, 2.50))
    arms = {d.name: pr.scores(d) for d in sorted(tmp_path.iterdir())}
    text = pr.table(arms)
    assert "| `kgs` | KGS only | 40.00 | 2.3000 | 30.00 | 2.8000 |" in text
    assert "| `joint_profile` | KGS + Fox, half each, profile input | 41.00 | 2.2500 | 36.00 | 2.5000 |" in text
    assert "| `kgs` | 41.00 (2.00) | 2.2500 (0.1000) | 30.50 (1.00) | 2.7500 (0.1000) |" in text
    assert "`joint_profile` |" not in text.split("two seeds")[1]  # one seed only: no mean row
    assert text.splitlines()[-1].startswith("Each figure: the single pass on the first 1,000 rows")


def test_table_differences_of_the_means_beside_both_seed_spreads(tmp_path):
    _keep(tmp_path, "kgs", (0.40, 2.30), (0.30, 2.80))
    _keep(tmp_path, "kgs_seed1", (0.42, 2.20), (0.31, 2.70))
    _keep(tmp_path, "joint_profile", (0.41, 2.25), (0.36, 2.50))
    arms = {d.name: pr.scores(d) for d in sorted(tmp_path.iterdir())}
    assert "difference of two-seed means" not in pr.table(arms)  # joint_profile has one seed only
    _keep(tmp_path, "joint_profile_seed1", (0.45, 2.15), (0.38, 2.40))
    arms = {d.name: pr.scores(d) for d in sorted(tmp_path.iterdir())}
    text = pr.table(arms)
    # means: joint_profile 43.00 / 2.2000 on KGS, kgs 41.00 / 2.2500; spreads 4.00 / 0.1000 and 2.00 / 0.1000
    assert "| `joint_profile` − `kgs` | KGS | +2.00 (4.00, 2.00) | -0.0500 (0.1000, 0.1000) |" in text
    assert "`joint_profile` − `fox`" not in text and "`joint` −" not in text  # fox and joint are not kept


def test_table_goes_between_the_markers():
    page = "a\n<!-- profile-runs:start -->\nold\n<!-- profile-runs:end -->\nb\n"
    assert pr.replace_table(page, "T") == "a\n<!-- profile-runs:start -->\nT\n<!-- profile-runs:end -->\nb\n"
    with pytest.raises(SystemExit):
        pr.replace_table("no markers", "T")


def test_run_refuses_missing_datasets_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(pr, "KEPT", tmp_path / "kept")
    with pytest.raises(SystemExit, match="is not built"):
        pr.run("kgs", tmp_path)


def test_run_adds_up_the_seconds_of_a_stopped_training(tmp_path, monkeypatch):
    """A training stopped (the trainer's exit 143 after SIGTERM) and run again: arm.json counts both invocations."""
    import subprocess

    data = tmp_path / "data"
    for d in pr.DOMAINS.values():
        (data / d).mkdir(parents=True)
        (data / d / "manifest.json").write_text("{}")
    monkeypatch.setattr(pr, "REPO", tmp_path)
    monkeypatch.setattr(pr, "KEPT", tmp_path / "kept")
    clock = iter([100.0, 130.0, 200.0, 250.0])  # start, stop; start, end
    monkeypatch.setattr(pr.time, "time", lambda: next(clock))
    trains = []

    def fake_run(cmd, cwd=None, check=False, stdout=None):
        if cmd[1] == "train":
            trains.append(cmd)
            if len(trains) == 1:
                raise subprocess.CalledProcessError(143, cmd)
            work = tmp_path / "runs" / "profiles" / "kgs"
            for f in ("config.json", "metrics_train.jsonl", "metrics_eval.jsonl"):
                (work / f).write_text("{}\n")

    monkeypatch.setattr(pr.subprocess, "run", fake_run)
    with pytest.raises(subprocess.CalledProcessError):
        pr.run("kgs", data)
    assert json.loads((tmp_path / "runs" / "profiles" / "kgs" / "train_wall_s.json").read_text()) == {"seconds": 30.0}
    kept = pr.run("kgs", data)
    assert json.loads((kept / "arm.json").read_text())["train_wall_s"] == 80.0 and trains[0] == trains[1]


@pytest.mark.slow
def test_who_scores_a_profiled_arm_on_both_test_splits(tmp_path, monkeypatch):
    """`who ARM --field source` end to end on two tiny builds of the sample games, declared kgs and fox."""
    from kifunet.cli import main
    from model_helpers import profiled_agz_tiny
    from test_play_profile import _save

    samples = REPO / "samples" / "gnugo"
    if not samples.is_dir():
        pytest.skip("samples/gnugo is absent")
    data = tmp_path / "data"
    for domain, d in pr.DOMAINS.items():
        assert main(["build", *(str(samples / f"gnugo-{i:04d}.sgf") for i in range(6)), "--out", str(data / d),
                     "--features", "agz", "--hash-split", "test:0.5", "--source", domain, "--workers", "0",
                     "--no-progress"]) == 0
    net = profiled_agz_tiny(19, 2.0)
    _save(tmp_path / "runs" / "profiles" / "joint_profile", net,
          {"model": {"name": "agz_tiny", "profile_embedding": 8}}, board_size=19)
    monkeypatch.setattr(pr, "REPO", tmp_path)
    monkeypatch.setattr(pr, "KEPT", tmp_path / "kept")
    (tmp_path / "kept" / "joint_profile").mkdir(parents=True)
    assert pr.main(["who", "joint_profile", "--field", "source", "--data-root", str(data)]) == 0
    res = json.loads((tmp_path / "kept" / "joint_profile" / "who_source.json").read_text())
    assert res["candidates"] == ["source=kgs", "source=fox"] and "source" not in res["hidden"]
    assert set(res["hidden"]) == {"rank", "opponent_rank", "date", "time_control", "handicap", "komi"}
    assert res["games"]["source=kgs"] == res["games"]["source=fox"] >= 1
    one = res["results"][0]
    assert one["n_games"] == 1 and one["trials"] == 2000 and 0.0 <= one["accuracy"] <= 1.0
    # kept: not computed again; its table goes between the page's markers
    monkeypatch.setattr(pr, "who", lambda *a: pytest.fail("a kept who_source.json is not computed again"))
    page = tmp_path / "page.md"
    page.write_text("x\n<!-- profile-who:start -->\nold\n<!-- profile-who:end -->\ny\n")
    assert pr.main(["who", "joint_profile", "--field", "source", "--into", str(page)]) == 0
    text = pr.who_table({"source": res})
    assert page.read_text() == f"x\n<!-- profile-who:start -->\n{text}\n<!-- profile-who:end -->\ny\n"
    g = res["games"]["source=kgs"]
    assert f"| source | `source=kgs` ({g}), `source=fox` ({g}) | {100 * one['accuracy']:.1f}% (" in text
    assert text.split("\n")[2].endswith("| 50% |")


def test_the_who_table_reads_each_field_and_rate():
    def rec(field, cands, acc):
        return {"arm": "joint_profile", "field": field, "candidates": cands, "hidden": ["komi"],
                "games": {c: 10 for c in cands},
                "results": [{"n_games": n, "trials": 2000, "accuracy": a, "labels": list(range(len(cands))),
                             "by_label": {str(k): a for k in range(len(cands))}} for n, a in zip(pr.WHO_N, acc)]}

    text = pr.who_table({"year": rec("year", ["year=2013", "year=2019"], [0.6, 0.75, 0.9]),
                         "source": rec("source", ["source=kgs", "source=fox"], [0.9, 1.0, None])})
    rows = text.split("\n")
    assert rows[2] == "| source | `source=kgs` (10), `source=fox` (10) | 90.0% (90, 90) | 100.0% (100, 100) | - | 50% |"
    assert rows[3].startswith("| year | `year=2013` (10), `year=2019` (10) | 60.0% (60, 60) | 75.0% (75, 75) | 90.0%")
    assert "over 2,000 draws" in text


def _dated_copies(out: Path, years: dict[int, int]) -> list[Path]:
    """Copies of sample games ``i`` with their ``DT`` set to 1 March of ``years[i]``."""
    import re

    out.mkdir(parents=True)
    paths = []
    for i, year in years.items():
        text = (REPO / "samples" / "gnugo" / f"gnugo-{i:04d}.sgf").read_text()
        paths.append(out / f"g{i}.sgf")
        paths[-1].write_text(re.sub(r"DT\[[^]]*\]", f"DT[{year}-03-01]", text, count=1))
    return paths


@pytest.fixture(scope="module")
def era_run(tmp_path_factory):
    """`era joint_profile` on two tiny builds, Fox (games of 2018 and 2013) and KGS (2015), with a tiny profiled net;
    ``(root, era.json as read)``."""
    from kifunet.cli import main
    from model_helpers import profiled_agz_tiny
    from test_play_profile import _save

    if not (REPO / "samples" / "gnugo").is_dir():
        pytest.skip("samples/gnugo is absent")
    root = tmp_path_factory.mktemp("era_run")
    games = {"fox": _dated_copies(root / "sgf_fox", {0: 2018, 1: 2018, 2: 2013, 3: 2013}),
             "kgs": _dated_copies(root / "sgf_kgs", {4: 2015, 5: 2015})}
    for domain, d in pr.DOMAINS.items():
        assert main(["build", *map(str, games[domain]), "--out", str(root / "data" / d), "--features", "agz",
                     "--split", "test:2000-2030", "--source", domain, "--workers", "0", "--no-progress"]) == 0
    _save(root / "runs" / "profiles" / "joint_profile", profiled_agz_tiny(19, 2.0),
          {"model": {"name": "agz_tiny", "profile_embedding": 8}}, board_size=19)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pr, "REPO", root)
        mp.setattr(pr, "KEPT", root / "kept")
        assert pr.main(["era", "joint_profile", "--rows", "40", "--data-root", str(root / "data")]) == 0
    return root, json.loads((root / "kept" / "joint_profile" / "era.json").read_text())


@pytest.mark.slow
def test_era_compares_true_and_forced_dates_on_both_test_splits(era_run):
    root, res = era_run
    assert res["arm"] == "joint_profile" and res["rows_limit"] == 40
    got = [(c["key"], c["domain"], tuple(c["years"]), c["forced_year"]) for c in res["comparisons"]]
    assert got == [(k, d, (a, b), y) for k, d, a, b, y in pr.ERA]
    for c in res["comparisons"]:
        assert c["rows"] == 40 and c["games"] >= 1
        assert c["d_top1"] == pytest.approx(c["top1_forced"] - c["top1_own"])
        assert c["d_nats"] == pytest.approx(c["nats_forced"] - c["nats_own"]) and c["mean_shift"] > 0
        shifts = [p["shift"] for p in c["most_shifted"]]
        assert len(shifts) == pr.ERA_LISTED and shifts == sorted(shifts, reverse=True)
        assert c["openings"]["top_rows"] == 1 and c["three_three"]["first_moves"] == 40
        assert len(c["pictures"]) == pr.ERA_PICTURES.get(c["key"], 0)
        for p in c["pictures"]:
            png = root / p
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size < 100_000
    years = {c["key"]: {Path(p["game"]).stem for p in c["most_shifted"]} for c in res["comparisons"]}
    assert years["a"] <= {"g0", "g1"} and years["b"] <= {"g2", "g3"} and years["c"] <= {"g4", "g5"}


def test_era_pictures_show_the_position_of_the_row(era_run):
    """The drawn stones and legal points are those of the game replayed to that move."""
    from kifunet.data_prep import profiles
    from kifunet.data_prep.datasets.dataset import open_split
    from kifunet.eval.board_image import load_position
    from kifunet.eval.runs import load_run

    root, res = era_run
    listed = res["comparisons"][0]["most_shifted"][:3]
    reader = open_split(str(root / "data" / pr.DOMAINS["fox"]), "test")
    pred = load_run(str(root / "runs" / "profiles" / "joint_profile"))
    positions = pr._era_positions(pred, reader, [p["row"] for p in listed], profiles.parse_fields("year=2013")["date"])
    for p, pos in zip(listed, positions):
        want = load_position(p["game"], p["move_number"], feature_set=None)
        assert np.array_equal(pos["stones"], want.stones) and np.array_equal(pos["legal"], want.legal)
        assert pos["played"] == want.target and pos["to_move"] == want.to_move
        assert pr._top(pos, "own", 1)[0][0] == p["own_top"]
        assert pos["own"].sum() == pytest.approx(1.0) and np.all(pos["forced"][~want.legal] == 0)


def test_era_kept_is_printed_or_written_between_the_markers(era_run, monkeypatch, capsys, tmp_path):
    root, res = era_run
    monkeypatch.setattr(pr, "REPO", root)
    monkeypatch.setattr(pr, "KEPT", root / "kept")
    monkeypatch.setattr(pr, "era", lambda *a: pytest.fail("a kept era.json is not computed again"))
    assert pr.main(["era", "joint_profile"]) == 0
    text = pr.era_table(res)
    assert capsys.readouterr().out == text + "\n"
    assert "| (a) Fox 2017-2019 | 2013 | 40 (" in text and "| (c) KGS 2015 | 2005 | 40 (" in text
    assert "](../kept/joint_profile/era/a_1.png)" in text
    page = tmp_path / "page.md"
    page.write_text("x\n<!-- profile-era:start -->\nold\n<!-- profile-era:end -->\ny\n")
    assert pr.main(["era", "joint_profile", "--into", str(page)]) == 0
    assert page.read_text() == f"x\n<!-- profile-era:start -->\n{text}\n<!-- profile-era:end -->\ny\n"
    with pytest.raises(SystemExit, match="profile-era"):
        pr.replace_era("no markers", "T")
    with pytest.raises(SystemExit, match="--rows"):
        pr.main(["era", "joint_profile", "--rows", "0"])


def test_era_refuses_an_arm_not_trained_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(pr, "REPO", tmp_path)
    monkeypatch.setattr(pr, "KEPT", tmp_path / "kept")
    with pytest.raises(SystemExit, match="holds no trained arm"):
        pr.era("joint_profile", tmp_path)


def test_the_manual_shows_the_kept_arms():
    from kifunet.eval import page_blocks

    kept = {d.name: pr.scores(d) for d in sorted(pr.KEPT.iterdir()) if (d / "arm.json").exists()} \
        if pr.KEPT.is_dir() else {}
    if not kept:
        pytest.skip("no arm is kept yet (python scripts/profile_runs.py run ARM makes one)")
    page = (REPO / "docs" / "profiles.md").read_text()
    assert page_blocks.block(page, "profile-runs") == pr.table(kept)


def test_the_manual_shows_the_kept_era():
    kept = pr.KEPT / "joint_profile" / "era.json"
    if not kept.exists():
        pytest.skip(f"{kept.relative_to(REPO)} is not kept yet (python scripts/profile_runs.py era joint_profile "
                    "--into docs/profiles.md makes it)")
    from kifunet.eval import page_blocks

    page = (REPO / "docs" / "profiles.md").read_text()
    for arm in ("joint_profile", "joint_profile_seed1"):  # the second seed's once it is kept
        if (kept := pr.KEPT / arm / "era.json").exists():
            assert page_blocks.block(page, pr.block_name("profile-era", arm)) == pr.era_table(
                json.loads(kept.read_text())), arm


def test_the_manual_shows_the_kept_who_tables():
    if not pr.kept_who("joint_profile"):
        pytest.skip("no who_FIELD.json of joint_profile is kept yet (python scripts/profile_runs.py who "
                    "joint_profile --field source --into docs/profiles.md makes one)")
    from kifunet.eval import page_blocks

    page = (REPO / "docs" / "profiles.md").read_text()
    for arm in ("joint_profile", "joint_profile_seed1"):
        if kept := pr.kept_who(arm):
            assert page_blocks.block(page, pr.block_name("profile-who", arm)) == pr.who_table(kept), arm


def test_each_profiled_arm_has_its_own_page_blocks():
    assert pr.block_name("profile-era", "joint_profile") == "profile-era"
    assert pr.block_name("profile-who", "joint_profile_seed1") == "profile-who-seed1"
    page = "x\n<!-- profile-era:start -->\nA\n<!-- profile-era:end -->\n<!-- profile-era-seed1:start -->\nB\n" \
           "<!-- profile-era-seed1:end -->\n"
    page = pr.replace_era(page, "C", "joint_profile_seed1")
    assert "profile-era:start -->\nA\n" in page and "profile-era-seed1:start -->\nC\n" in page
    page = pr.replace_era(page, "D")
    assert "profile-era:start -->\nD\n" in page and "profile-era-seed1:start -->\nC\n" in page
    with pytest.raises(SystemExit, match="profile-who-seed1"):
        pr.replace_who("<!-- profile-who:start -->\n<!-- profile-who:end -->", "T", "joint_profile_seed1")


def test_era_picture_keeps_the_played_move_red(tmp_path):
    """The era picture's palette cut keeps the played move's outline pure red, beside a dark heat map around it
    (a median cut alone merged it into the browns)."""
    from PIL import Image

    from kifunet.eval.board_image import masked_probs

    rng = np.random.default_rng(0)
    n = 19
    stones = rng.choice([0, 0, 0, 1, 2], size=(n, n)).astype(np.int8)
    legal = np.concatenate([stones.reshape(-1) == 0, [True]])
    played = int(np.flatnonzero(legal[:-1])[5])
    z = rng.normal(0, 1, n * n + 1)
    r, c = divmod(played, n)
    for i in range(max(0, r - 1), min(n, r + 2)):
        z[i * n + max(0, c - 1):i * n + min(n, c + 2)] += 4  # the darkest heat on and around the played move
    p = masked_probs(z, legal)
    pos = {"stones": stones, "legal": legal, "played": played, "days": 17000, "own": p, "forced": p}
    path = tmp_path / "era.png"
    pr._era_picture(pos, "t", 2013, path)
    image = Image.open(path)
    assert image.mode == "P" and len(image.getcolors()) <= 64
    red = np.all(np.asarray(image.convert("RGB")) == (255, 0, 0), axis=-1)
    assert red.sum() >= 200  # the outline of one point, 2 points wide
