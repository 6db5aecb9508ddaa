"""Per-profile accuracy (issue 33): the year / source / time-control breakdowns of eval/metrics.py, filled by
eval/evaluate.py on a tiny dataset whose games differ in date, source and time control; ``kifunet tables --by``
on new and older results; and the tables in docs/profiles.md against the kept results they were printed from."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import numpy as np
import pytest
from flax import nnx

from kifunet.data_prep import profiles
from kifunet.data_prep.datasets.reader import Reader
from kifunet.eval.evaluate import Predictor, evaluate, format_result, load_result, merge_results, save_result
from kifunet.models.forward import NetFacts, Outputs

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "gnugo"
DOC = ROOT / "docs" / "profiles.md"
KEPT_V2 = ROOT / "pretrained" / "kgs_cpu_default" / "eval" / "kgs_gonn_test_first100000.json"
PROFILE_PARTS = ("by_year", "by_source", "by_time_control")
# (date, extra root properties) per game: years 2013/2016/2019 and one without a date; KGS, Fox and no source;
# blitz (1 min + 3x3 s), fast (20 min), slow (2 h) and no time control
VARIANTS = [("2013-11-10", "PC[KGS]TM[60]OT[3x3 byo-yomi]"), ("2016-03-09", "PC[foxwq]TM[1200]"),
            ("2016-12-31", ""), ("2019-05-01", "PC[KGS]TM[7200]"), (None, "PC[foxwq]TM[60]OT[3x3 byo-yomi]"),
            ("2013-01-02", "")]


@pytest.fixture(scope="module")
def profile_ds(tmp_path_factory) -> Path:
    """A maddison dataset of 6 sample games rewritten to the :data:`VARIANTS` profiles (every split: train)."""
    from kifunet.cli import main

    tmp = tmp_path_factory.mktemp("profiles")
    files = []
    for i, (date, extra) in enumerate(VARIANTS):
        text = (SAMPLES / f"gnugo-{i:04d}.sgf").read_text(encoding="utf-8")
        text, n = re.subn(r"DT\[[^\]]*\]", f"DT[{date}]" if date else "", text, count=1)
        assert n == 1
        files.append(tmp / f"game{i}.sgf")
        files[-1].write_text(text.replace("(;", "(;" + extra, 1), encoding="utf-8")
    out = tmp / "ds"
    assert main(["build", *map(str, files), "--out", str(out), "--features", "maddison", "--workers", "0",
                 "--no-progress"]) == 0
    return out


class PlaneNet(nnx.Module):
    """logits[k] = w . planes[k] + bias[k]; pass -1e9. Testing only."""

    def __init__(self, board_size, in_planes):
        rng = np.random.default_rng(1)
        self.board_size, self.in_planes = board_size, in_planes
        self.w = nnx.Param(np.asarray(rng.normal(size=in_planes), np.float32))
        self.bias = nnx.Param(np.asarray(rng.normal(size=board_size * board_size), np.float32))
        self.facts = NetFacts(board_size=board_size, in_planes=in_planes, has_value=False, has_pass=False,
                              reads_rank=False, reads_profile=False, resizable=False)

    def __call__(self, planes, rank=None, to_move=None, profile=None):
        import jax.numpy as jnp

        x = jnp.asarray(planes).astype(jnp.float32)
        z = jnp.einsum("bhwc,c->bhw", x, self.w[...]).reshape(x.shape[0], -1) + self.bias[...]
        return Outputs(jnp.concatenate([z, jnp.full((x.shape[0], 1), -1e9, jnp.float32)], axis=1))


@pytest.fixture(scope="module")
def profile_eval(profile_ds):
    r = Reader(str(profile_ds), "train")
    pred = Predictor(PlaneNet(r.board_size, r.feature_set.num_planes), r.feature_name,
                     info={"name": "planenet", "model": "PlaneNet", "params": 0})
    return r, pred, evaluate(pred, r, batch_size=50, ensemble=True, progress=False)


def _expected_groups(rows: dict) -> dict[str, dict[str, int]]:
    """Each profile breakdown's group sizes, computed here from the split's own game columns."""
    years = [str((datetime.date(1970, 1, 1) + datetime.timedelta(days=int(d))).year)
             if d != profiles.UNKNOWN_DAYS else "unknown" for d in rows["game_days"]]
    sources = [profiles.SOURCES[c] if c >= 0 else "unknown" for c in rows["game_source"]]
    tcs = [profiles.TIME_CONTROLS[c] if c >= 0 else "unknown" for c in rows["game_time_control"]]
    count = lambda labels: {g: labels.count(g) for g in set(labels)}  # noqa: E731
    return {"by_year": count(years), "by_source": count(sources), "by_time_control": count(tcs)}


def test_profile_breakdowns_count_every_row_once(profile_eval):
    r, _, res = profile_eval
    rows = r.with_profile(True).batch(np.arange(len(r)))
    want = _expected_groups(rows)
    assert want["by_year"].keys() == {"2013", "2016", "2019", "unknown"}
    assert want["by_source"].keys() == {"kgs", "fox", "unknown"}
    assert want["by_time_control"].keys() == {"blitz", "fast", "slow", "unknown"}
    for mode in ("single", "ensemble"):
        block = res["results"][mode]
        assert block["count"] == len(r)
        for part in PROFILE_PARTS:
            groups = block[part]
            assert {g: b["count"] for g, b in groups.items()} == want[part], part
            assert list(groups)[-1] == "unknown"  # groups in order, unknown last
            assert [sum(col) for col in zip(*(b["topk_correct"] for b in groups.values()))] == block["topk_correct"]
            assert sum(b["nll_sum"] for b in groups.values()) == pytest.approx(block["nll_sum"], rel=1e-12)
    assert list(res["results"]["single"]["by_year"]) == ["2013", "2016", "2019", "unknown"]
    text = format_result(res)
    assert "single pass, by year:" in text and "by source:" in text and "by time control:" in text


def test_profile_breakdowns_merge_and_version(profile_eval):
    r, pred, res = profile_eval
    assert res["format_version"] == 3
    parts = [evaluate(pred, r, batch_size=50, progress=False, start=a, limit=b - a)
             for a, b in ((0, 77), (77, len(r)))]
    merged = merge_results(parts)["results"]["single"]
    for part in PROFILE_PARTS:
        whole = res["results"]["single"][part]
        assert list(merged[part]) == list(whole)
        assert {g: b["topk_correct"] for g, b in merged[part].items()} == {g: b["topk_correct"]
                                                                        for g, b in whole.items()}
    # a part of an older result has no profile breakdown: the merge drops them rather than undercount
    old = json.loads(json.dumps(parts[1]))
    for part in PROFILE_PARTS:
        old["results"]["single"].pop(part)
    assert not set(PROFILE_PARTS) & set(merge_results([parts[0], old])["results"]["single"])


def test_tables_by_profile_and_an_older_result(profile_eval, tmp_path, capsys):
    from kifunet.cli import main

    _, _, res = profile_eval
    new, old_path = tmp_path / "new.json", tmp_path / "old.json"
    save_result(res, str(new))
    old = json.loads(json.dumps(res))
    old["format_version"] = 2
    for block in old["results"].values():
        for part in PROFILE_PARTS:
            block.pop(part)
    old_path.write_text(json.dumps(old))
    assert "by year" not in format_result(load_result(str(old_path)))  # an older result still loads and prints
    capsys.readouterr()
    assert main(["tables", "--by", "source", str(new)]) == 0
    out = capsys.readouterr().out
    for g, b in res["results"]["single"]["by_source"].items():
        assert f"| {g} | {b['count']:,} | {100 * b['accuracy']['1']:.1f} |" in out
    assert out.count("| group | positions | top-1 % | top-5 % | CE (nats) |") == 2  # single pass and ensemble
    for path in (old_path, KEPT_V2):
        if not path.exists():
            continue
        assert main(["tables", "--by", "year", str(path)]) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(path) in err and "no by_year breakdown" in err
    # beside a result that has it: the older one gets its line, the other its table
    assert main(["tables", "--by", "year", "--format", "html", str(old_path), str(new)]) == 0
    cap = capsys.readouterr()
    assert cap.err.strip() == f"{old_path}: no by_year breakdown (eval result format version 2; evaluate again " \
                              "with this kifunet for it)"
    assert cap.out.count("<table") == 2 and "<td>2016</td>" in cap.out
    assert main(["tables", "--by", "rank", str(old_path)]) == 0  # every version has the rank breakdown
    assert "| group | positions |" in capsys.readouterr().out


def _doc_commands() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"^(kifunet tables --by \S+ .+)$", text, flags=re.M)


def test_docs_profile_tables_equal_the_kept_results(capsys, monkeypatch):
    """Every ``kifunet tables --by ...`` command in docs/profiles.md prints, from the kept result JSONs, exactly the
    tables the page shows under it."""
    from kifunet.cli import main

    text = DOC.read_text(encoding="utf-8")
    commands = _doc_commands()
    assert len(commands) >= 3, "docs/profiles.md shows no per-profile tables"
    for command in commands:
        argv = command.split()[1:]
        for f in argv[3:]:
            assert (ROOT / f).is_file(), f"{command}: {f} is not kept in the repository"
        capsys.readouterr()
        monkeypatch.chdir(ROOT)  # the page's commands name the kept files from the repository root
        assert main(argv) == 0, command
        out = capsys.readouterr().out.strip()
        assert f"```sh\n{command}\n```\n\n{out}\n" in text, f"docs/profiles.md: the tables under `{command}` differ " \
                                                          "from what it prints"
