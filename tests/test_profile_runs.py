"""scripts/profile_runs.py (issue 33's joint experiment): the arms differ only in their data and the profile input,
their commands are valid configs, and the table reads kept results (fixtures written here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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


def test_table_goes_between_the_markers():
    page = "a\n<!-- profile-runs:start -->\nold\n<!-- profile-runs:end -->\nb\n"
    assert pr.replace_table(page, "T") == "a\n<!-- profile-runs:start -->\nT\n<!-- profile-runs:end -->\nb\n"
    with pytest.raises(SystemExit):
        pr.replace_table("no markers", "T")


def test_run_refuses_missing_datasets_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(pr, "KEPT", tmp_path / "kept")
    with pytest.raises(SystemExit, match="is not built"):
        pr.run("kgs", tmp_path)


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
