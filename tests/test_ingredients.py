"""scripts/ingredients.py: every row changes the baseline in exactly the keys it names, builds its net, and the
table compares each row with the baseline seeds' mean and prints their spread."""

from __future__ import annotations

import json

import pytest

from conftest import load_script

ing = load_script("ingredients")


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _config(row):
    from kifunet.train import configs

    assert not configs.parse_overrides(list(row.overrides))[1]
    return ing.row_config(row)


# the keys each row changes; the feature-set rows change the dataset only
CHANGED = {
    "base": set(), "base_seed1": {"seed"}, "relu": {"model.kwargs.activation"},
    "no_global_pool": {"model.kwargs.global_blocks", "model.kwargs.head_global_pool"},
    "no_dilation": {"model.kwargs.dilated_channels"}, "features_maddison": set(), "features_alphago": set(),
    "rank_vector": {"model.rank_embedding"}, "no_history_dropout": {"input.history_dropout"},
    "wide_shallow": {"model.kwargs.channels", "model.kwargs.blocks", "model.kwargs.global_blocks"},
    "deep_narrow": {"model.kwargs.channels", "model.kwargs.blocks", "model.kwargs.global_blocks"},
    "batch256": {"batch_size"},
    "constant": {"schedule.name", "train_positions", "time_limit_s"},
    "constant_seed1": {"schedule.name", "train_positions", "time_limit_s", "seed"},
    "extra_block": {"model.kwargs.blocks"},
    "extra_wide": {"model.kwargs.blocks", "model.kwargs.wide_blocks"},
    "chain_1x32": {"model.kwargs.blocks", "model.kwargs.chain_blocks", "model.kwargs.chain_channels"},
    "chain_2x64": {"model.kwargs.blocks", "model.kwargs.chain_blocks", "model.kwargs.chain_channels"},
    "six_blocks": {"model.kwargs.blocks"},
    "rank_planes": {"input.add_planes"},
}
CHANGED.update({f"{n}_seed1": CHANGED[n] | {"seed"} for n in ing.SECOND_SEEDS})
# issue 51's heads rows: the baseline net with a head and its loss weight
CHANGED.update({"heads_ownership": {"model.kwargs.ownership_head", "ownership_weight"},
                "heads_score": {"model.kwargs.score_head", "score_weight"}})
CHANGED["heads_both"] = CHANGED["heads_ownership"] | CHANGED["heads_score"]
CHANGED.update({f"{n}_seed1": CHANGED[n] | {"seed"} for n in ("heads_ownership", "heads_score", "heads_both")})

#: issue 51's rows of other nets: (model name, constructor arguments, parameters on the 26 gonn planes at 19x19)
NETS = {"mao": ("mao", {}, 489_802), "resnet18": ("resnet18", {}, 491_949),
        "garb": ("garb5", {"plain": False}, 373_540), "garb_plain": ("garb5", {"plain": True}, 362_148)}


#: issue 51's equal-time rows: the faster net of each pair, trained as long as the slower took
EQUAL_TIME = {"resnet18_equal_time": ("resnet18", "mao"), "garb_plain_equal_time": ("garb_plain", "garb")}


def test_every_row_is_listed_here():
    nets = {f"{n}{s}" for n in (*NETS, *EQUAL_TIME) for s in ("", "_seed1")}
    assert set(ing.ROWS) == set(CHANGED) | nets and not set(CHANGED) & nets
    assert {n for n, r in ing.ROWS.items() if r.net} == nets
    assert {n: r.equal_time for n, r in ing.ROWS.items() if r.equal_time} == {
        **EQUAL_TIME, **{f"{n}_seed1": pair for n, pair in EQUAL_TIME.items()}}


def test_an_equal_time_row_trains_the_faster_net_as_long_as_the_slower_took(tmp_path, monkeypatch):
    """Its length is the slower kept row's final positions times the kept rows' speed ratio (median positions/s,
    fast over slow); the rest is its net's row (and seed). Before both rows are kept it has no command."""
    monkeypatch.setattr(ing, "KEPT", tmp_path)
    with pytest.raises(SystemExit, match="^ingredients: an equal-time row of resnet18 takes its length from the kept "
                       "rows resnet18 and mao"):
        ing.command("resnet18_equal_time", ing.ROWS["resnet18_equal_time"], ing.Path("data"))
    _kept(tmp_path, "mao", 0.40, 2.4, [90, 100, 110])
    _kept(tmp_path, "resnet18", 0.40, 2.4, [150, 150])  # final positions 640,000 (the helper's)
    assert ing.main(["list"]) == 0
    for name in ("resnet18_equal_time", "resnet18_equal_time_seed1"):
        cmd = ing.command(name, ing.ROWS[name], ing.Path("data"))
        assert cmd[-1] == "--config.train_positions=960000"  # 640,000 x 150 / 100
        got = _flat(_config(ing.ROWS[name]).to_dict())
        net = _flat(_config(ing.ROWS["resnet18" + name[len("resnet18_equal_time"):]]).to_dict())
        assert {k for k in got if got[k] != net[k]} == {"train_positions"} and got["train_positions"] == 960_000


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NETS))
def test_each_net_row_is_the_baseline_recipe_with_its_net_at_its_parameter_count(name):
    """A net row (issue 51) changes the model only: its name and constructor arguments replace the baseline's,
    and every other key (data, batch, schedule, evaluation) is the baseline's; its seed-1 twin adds the seed. The
    parameter counts are exact: MAO and its ResNet-18 within 0.5% of each other, the GARB net 3.1% above its plain
    twin (its two GARB blocks' global pooling and wider middle)."""
    from flax import nnx

    from kifunet import models
    from kifunet.data_prep.planes import features
    from kifunet.train import model_config

    model, kwargs, params = NETS[name]
    base = _flat(_config(ing.ROWS["base"]).to_dict())
    for row in (name, f"{name}_seed1"):
        got = _flat(_config(ing.ROWS[row]).to_dict())
        rest = {k for k in set(got) | set(base) if not k.startswith("model.kwargs.") and got.get(k) != base.get(k)}
        assert rest == ({"model.name"} if row == name else {"model.name", "seed"})
        assert got["model.name"] == model and {k[13:]: v for k, v in got.items() if k.startswith("model.kwargs.")
                                               } == kwargs
        cmd = ing.command(row, ing.ROWS[row], ing.Path("data"))
        assert cmd[2:4] == ["--config", f"train/configs/ingredients.py:{ing.ROWS[name].net}"]
    cfg = _config(ing.ROWS[name])
    net = nnx.eval_shape(lambda: model_config.build_model(cfg.model, seed=0, board_size=19,
                                                          in_planes=features.get("gonn").num_planes))
    assert models.count_params(net) == params
    pair = next(p for p in ing.CLAIM_PAIRS if name in p)
    a, b = (NETS[n][2] for n in pair)
    assert round(100 * (a - b) / b, 2) == {"mao": -0.44, "garb": 3.15}[pair[0]]


def test_an_unknown_net_of_the_config_is_refused_in_one_line():
    from kifunet.train import configs

    with pytest.raises(ValueError, match="ingredients.py: no net 'mao2'; known: mao, resnet18, garb, garb_plain"):
        configs.load(str(ing.REPO / "train/configs/ingredients.py:mao2"))


def test_an_ownership_row_refuses_a_dataset_without_ownership_targets(tmp_path):
    """``run``/``retrain`` of a row that trains the ownership head stop in one line on a version-1 dataset (read
    with every ownership target masked) or one built with ``--no-targets``; a version-2 dataset with targets, a row
    without the head, and a dataset not built yet (``kifunet train`` reports it) pass."""
    (tmp_path / "kgs_gonn").mkdir()
    man = tmp_path / "kgs_gonn" / "manifest.json"
    ing.check_dataset("heads_both", tmp_path)  # not built yet
    man.write_text(json.dumps({"format": "kifunet-dataset", "format_version": 1}))
    for name in ("heads_ownership", "heads_both", "heads_both_seed1"):
        with pytest.raises(SystemExit, match=rf"^ingredients: {name} trains the ownership head, but .*manifest.json "
                           r"was built before ownership targets \(manifest format_version 1\): build it again$"):
            ing.check_dataset(name, tmp_path)
    ing.check_dataset("heads_score", tmp_path)  # the score targets come from the results: every version has them
    ing.check_dataset("base", tmp_path)
    man.write_text(json.dumps({"format": "kifunet-dataset", "format_version": 2, "targets": False}))
    with pytest.raises(SystemExit, match=r"manifest.json was built with --no-targets: build it again$"):
        ing.check_dataset("heads_ownership", tmp_path)
    ing.check_dataset("heads_score", tmp_path)
    man.write_text(json.dumps({"format": "kifunet-dataset", "format_version": 2}))
    ing.check_dataset("heads_both", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHANGED))
def test_each_row_changes_exactly_its_keys_and_builds(name):
    from flax import nnx

    from kifunet.data_prep.planes import features
    from kifunet.train import model_config

    base = _flat(_config(ing.ROWS["base"]).to_dict())
    cfg = _config(ing.ROWS[name])
    got = _flat(cfg.to_dict())
    assert {k for k in got if got[k] != base[k]} == CHANGED[name]
    cmd, ov = ing.command(name, ing.ROWS[name], ing.Path("data")), list(ing.ROWS[name].overrides)
    assert cmd[len(cmd) - len(ov):] == ov and f"--config.dataset=data/kgs_{ing.ROWS[name].features}" in cmd
    fs = features.get(features.with_constant_planes(ing.ROWS[name].features, cfg.input.add_planes))
    model = nnx.eval_shape(lambda: model_config.build_model(cfg.model, seed=0, board_size=19, in_planes=fs.num_planes))
    assert model.in_planes == (35 if name == "rank_planes" else fs.num_planes)


#: config fields that cannot change a row's figures: where the data lies, and when checkpoints are written (a resume
#: is bit-identical; ``checkpoint_every_minutes`` came after the rows were run)
NOT_RESULTS = {"dataset", "checkpoint_every_minutes"}

#: keys added to the config after some rows ran, with the value the code had before they existed (a kept row
#: without the key ran with it); ``test_added_keys_hold_what_the_code_did_before`` checks the values
ADDED_LATER = {"model.kwargs.wide_blocks": (), "model.kwargs.chain_blocks": (), "model.kwargs.chain_channels": 0,
               "input.add_planes": "", "model.profile_embedding": 0,
               "input.profile_dropout": 0.1, "input.mix_weights": "",  # profile_dropout acts only on a profiled net
               "allow_dataset_change": False, "matmul_precision": "default",  # (embedding > 0); "default": JAX's own
               "ownership_weight": 0.0, "score_weight": 0.0,  # 0: no head loss, the step without the heads
               "model.kwargs.ownership_head": False, "model.kwargs.score_head": False}


def test_added_keys_hold_what_the_code_did_before():
    import inspect

    from kifunet.models.gonn import GoNNResNet

    base = _flat(_config(ing.ROWS["base"]).to_dict())
    sig = inspect.signature(GoNNResNet.__init__).parameters
    for key, before in ADDED_LATER.items():
        assert base[key] == before, key
        if key.startswith("model.kwargs."):  # the model's default: what a config without the key built
            assert sig[key.rsplit(".", 1)[1]].default == before, key


def test_each_kept_row_ran_the_config_its_command_gives_today():
    """A kept row's ``config.json`` is what its row's command resolves to now (the dataset and the runtime
    fields aside): editing the baseline config or a row without rerunning it fails here."""
    kept = sorted(d for d in ing.KEPT.iterdir() if (d / "row.json").exists())
    assert {"constant", "constant_seed1"} <= {d.name for d in kept}
    for d in kept:
        ran = _flat(json.loads((d / "config.json").read_text()))
        now = _flat(_config(ing.ROWS[d.name]).to_dict())
        ran = {k: (tuple(v) if isinstance(v, list) else v) for k, v in ran.items()}
        now = {k: (tuple(v) if isinstance(v, list) else v) for k, v in now.items()}
        ran = {**{k: v for k, v in ADDED_LATER.items() if k not in ran and k in now}, **ran}  # keys the net has
        diff = {k for k in set(ran) | set(now) if ran.get(k) != now.get(k)} - NOT_RESULTS
        assert not diff, (d.name, {k: (ran.get(k), now.get(k)) for k in diff})
        assert json.loads((d / "row.json").read_text())["command"] == " ".join(
            ing.command(d.name, ing.ROWS[d.name], ing.Path("data")))


def _kept(tmp_path, name, top1, nats, rate):
    d = tmp_path / name
    d.mkdir()
    (d / "row.json").write_text(json.dumps(dict(row=name, change=ing.ROWS[name].change)))
    (d / "metrics_eval.jsonl").write_text(
        json.dumps(dict(positions=1000.0, top1=0.30, nats=3.0, eval_positions=10000.0)) + "\n"
        + json.dumps(dict(positions=640000.0, top1=top1, nats=nats, eval_positions=100000.0)) + "\n")
    (d / "metrics_train.jsonl").write_text("".join(json.dumps(dict(positions_per_s=r)) + "\n" for r in rate))
    return ing.summary(d)


def test_table_against_the_mean_of_the_seeds_with_their_spread(tmp_path):
    rows = {"base": _kept(tmp_path, "base", 0.40, 2.40, [700, 710, 720]),
            "base_seed1": _kept(tmp_path, "base_seed1", 0.41, 2.38, [690]),
            "relu": _kept(tmp_path, "relu", 0.395, 2.42, [800, 900])}
    assert rows["base"]["positions"] == 640000 and rows["base"]["eval_rows"] == 100000
    lines = ing.table(rows).splitlines()
    assert len(lines) == 7 and lines[5] == ""
    assert lines[6] == "Seed spread of `base` / `base_seed1`: 1.00 points top-1, 0.0200 nats."
    assert lines[4] == ("| `relu` | ReLU instead of PReLU | 640,000 | 900 | 39.50 | -1.00 (1.00) | 2.4200 | "
                        "+0.0300 (0.0200) | not scored |")
    assert "| 710 | 40.00 | -0.50 (1.00) | 2.4000 | +0.0100 (0.0200) | not scored |" in lines[2]
    (tmp_path / "relu" / "probes.json").write_text(json.dumps({"overall": {"top1": 0.125, "top5": 0.5}}))
    rows["relu"] = ing.summary(tmp_path / "relu")
    assert ing.table(rows).splitlines()[4].endswith("| +0.0300 (0.0200) | 12.5 / 50.0 |")
    rows["constant"] = _kept(tmp_path, "constant", 0.38, 2.5, [650])
    rows["constant_seed1"] = _kept(tmp_path, "constant_seed1", 0.3925, 2.45, [650])
    assert ing.table(rows).splitlines()[-1] == ("Seed spread of `constant` / `constant_seed1`: 1.25 points top-1, "
                                                "0.0500 nats.")
    with pytest.raises(SystemExit, match="no baseline"):
        ing.table({"relu": rows["relu"]})


def test_readme_table_is_the_kept_runs():
    from docs_pages import page

    assert ing.table(ing.kept_rows()) in page("runs")  # the manual's table (docs/runs.md: What each ingredient is worth)


def test_the_table_is_written_into_the_page_in_place():
    page = ("# Runs\n\ntext before\n\n| row | change | positions |\n|---|---|---:|\n| `a` | x | 1 |\n\n"
            "Seed spread of `base` / `base_seed1`: 1.00 points top-1, 0.0200 nats.\n\n"
            "Seed spread of `constant` / `constant_seed1`: 2.00 points top-1, 0.0300 nats.\n\nThe text after.\n")
    new = "| row | change | positions |\n|---|---|---:|\n| `b` | y | 2 |\n\nSeed spread of `base` / `base_seed1`: 0."
    out = ing.replace_table(page, new)
    assert out == "# Runs\n\ntext before\n\n" + new + "\n\nThe text after.\n"
    assert ing.replace_table(out, new) == out
    with pytest.raises(SystemExit, match="no such table"):
        ing.replace_table("# nothing here\n", new)


def test_the_speed_table_in_the_manual_is_the_kept_benchmark():
    import sys as _sys

    _sys.path.insert(0, str(ing.REPO / "benchmarks"))
    import bench_ingredient_speed as bench

    res = json.loads((ing.KEPT / "speed.json").read_text())
    assert [r["row"] for r in res["rows"]] == bench.rows_to_time() and res["rows"][0]["row"] == "base"
    assert bench.table(res) in (ing.REPO / "docs" / "runs.md").read_text()


def test_a_run_elsewhere_stands_for_a_row_only_with_the_same_final_evaluation(tmp_path, monkeypatch):
    """``probes ROW --workdir DIR`` scores a net trained elsewhere (the profile arm ``kgs`` is row ``base`` with the
    dataset built again) only when its final evaluation is the kept row's to the last digit."""
    final = dict(step=4688, positions=600064.0, nats=2.24679953125, top1=0.4116, top4=0.70004, eval_positions=1e5)
    monkeypatch.setattr(ing, "KEPT", tmp_path / "kept")
    (tmp_path / "kept" / "base").mkdir(parents=True)
    (tmp_path / "kept" / "base" / "metrics_eval.jsonl").write_text(
        json.dumps(dict(final, step=100, nats=3.0)) + "\n" + json.dumps(final) + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    with pytest.raises(SystemExit, match="need both"):
        ing.check_same_run("base", work)
    (work / "metrics_eval.jsonl").write_text(json.dumps(dict(final, seconds=12.0)) + "\n")
    ing.check_same_run("base", work)  # the same net: passes
    (work / "metrics_eval.jsonl").write_text(json.dumps(dict(final, nats=2.24679953126)) + "\n")
    with pytest.raises(SystemExit, match=r"not row base's run: .*nats \(2.24679953125 kept, 2.24679953126 there\)"):
        ing.check_same_run("base", work)


def test_the_baseline_probe_scores_are_those_of_the_profile_arms_that_reproduced_it():
    """The kept ``base`` / ``base_seed1`` probe scores name the run they were measured on, and that run's final
    evaluation (in its kept profile arm) is the row's."""
    for row, arm in (("base", "kgs"), ("base_seed1", "kgs_seed1")):
        res = json.loads((ing.KEPT / row / "probes.json").read_text())
        assert res["net"]["workdir"] == f"runs/profiles/{arm}" and res["net"]["positions"] == 600064
        arm_eval = (ing.REPO / "benchmarks" / "results" / "profiles" / arm / "metrics_eval.jsonl")
        ing.check_same_run(row, arm_eval.parent)


def test_every_kept_row_is_scored_on_the_net_of_its_final_evaluation():
    """Every row of the table has a probe score, measured on a net at the row's final step and positions (issue
    51's claim rows once they are run)."""
    from kifunet.train.metric_writer import read_jsonl

    rows = ing.kept_rows()
    assert set(rows) <= set(ing.ROWS) and set(ing.ROWS) - set(rows) <= set(ing.CLAIM_ROWS)
    for name in rows:
        net = json.loads((ing.KEPT / name / "probes.json").read_text())["net"]
        final = read_jsonl(str(ing.KEPT / name / "metrics_eval.jsonl"))[-1]
        assert (net["step"], net["positions"]) == (final["step"], final["positions"]), name


def test_the_probe_table_counts_the_probes_solved_per_category(tmp_path):
    def scored(name, ladder, eye):  # (top-1, top-5) solved of 4 ladders and 2 second eyes
        d = tmp_path / name
        d.mkdir()
        cats = {"ladder": dict(count=4, top1=ladder[0] / 4, top5=ladder[1] / 4),
                "second_eye": dict(count=2, top1=eye[0] / 2, top5=eye[1] / 2)}
        overall = dict(count=6, top1=(ladder[0] + eye[0]) / 6, top5=(ladder[1] + eye[1]) / 6)
        (d / "probes.json").write_text(json.dumps(dict(categories=cats, overall=overall)))

    with pytest.raises(SystemExit, match="no row's probes"):
        ing.probe_table(tmp_path)
    scored("relu", (1, 3), (0, 1))
    scored("base", (3, 4), (2, 2))
    (tmp_path / "unscored").mkdir()
    assert ing.probe_table(tmp_path).splitlines() == [
        "| row (probes solved, top-1 / top-5) | ladder (4) | second eye (2) | all (6) |", "|---|---:|---:|---:|",
        "| `base` | 3 / 4 | 2 / 2 | 5 / 6 |", "| `relu` | 1 / 3 | 0 / 1 | 1 / 4 |"]


def test_the_manual_has_the_probe_table_of_the_kept_rows():
    from docs_pages import page

    assert ing.probe_table() in page("runs")
    out = ing.replace_table(page("runs"), "| row (probes solved, top-1 / top-5) | x |\n|---|", ing.PROBE_HEAD)
    assert ing.table(ing.kept_rows()) in out


def test_a_time_limited_row_is_replayed_to_its_kept_final_positions(monkeypatch):
    """``retrain``: a row with a fixed length trains again with its own command; a time-limited one (how far it got
    depends on the machine) trains to its kept final positions with no time limit, and only on a constant rate,
    which does not depend on the run's length."""
    data = ing.Path("data")
    assert ing.replay_command("relu", data) == ing.command("relu", ing.ROWS["relu"], data)
    for name in ("constant", "constant_seed1"):
        final = json.loads((ing.KEPT / name / "metrics_eval.jsonl").read_text().splitlines()[-1])
        cmd = ing.replay_command(name, data)
        assert [a for a in cmd if "train_positions" in a or "time_limit" in a] == [
            f"--config.train_positions={int(final['positions'])}", "--config.time_limit_s=0"]
        config = _config(ing.Row("", overrides=tuple(a for a in cmd if a.startswith("--config.")
                                                     and not a.startswith("--config.dataset="))))
        assert config.time_limit_s == 0 and config.train_positions == final["step"] * config.batch_size
        assert config.schedule.name == "constant" and config.seed == (name == "constant_seed1")
    monkeypatch.setitem(ing.ROWS, "cosine_900s", ing.Row("cosine, 900 s", overrides=("--config.time_limit_s=900",)))
    with pytest.raises(SystemExit, match="cosine_900s is time-limited and its schedule depends on its length"):
        ing.replay_command("cosine_900s", data)


def test_the_manuals_run_commands_name_rows_and_the_claim_rows_are_all_there():
    """docs/runs.md's `scripts/ingredients.py run ...` lines (continued with a backslash) name rows only, and
    every issue-51 row is in one of them."""
    import re

    from docs_pages import page

    text = page("runs").replace("\\\n", " ")
    named = set()
    for m in re.finditer(r"python scripts/ingredients\.py run ([^#\n]*)", text):
        named |= set(m.group(1).split())
    assert named <= set(ing.ROWS), named - set(ing.ROWS)
    assert set(ing.CLAIM_ROWS) <= named
