"""eval/published.toml covers docs/published.md; eval/tables.py and `kifunet tables` print ours beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from kifunet.eval import metrics as M
from kifunet.eval import published as P
from kifunet.eval import tables as T

PUBLISHED_MD = Path(__file__).resolve().parents[1] / "docs" / "published.md"
NUM = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> set[float]:
    out = set()
    for tok in NUM.findall(str(text)):
        v = float(tok.replace(",", ""))
        out.add(round(v, 6))
    return out


def _data_numbers(obj) -> set[float]:
    out = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _data_numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _data_numbers(v)
    elif isinstance(obj, bool):
        pass
    elif isinstance(obj, (int, float)):
        out |= {round(float(obj), 6), round(float(obj) / 1e6, 6)}  # 147_000_000 is printed "147M"
    elif isinstance(obj, str):
        out |= _numbers(obj)
    return out


@pytest.fixture
def published_md() -> str:
    return PUBLISHED_MD.read_text(encoding="utf-8")


def _md_tables(md: str) -> dict[str, list[list[str]]]:
    tables, title = {}, None
    for line in md.splitlines():
        if line.startswith("#"):
            title = line.lstrip("# ").strip()
        elif line.startswith("|") and not set(line) <= set("|-: "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            tables.setdefault(title, []).append(cells)
    return {k: v[1:] for k, v in tables.items()}  # drop header rows


def test_every_number_of_published_md_is_data(published_md):
    have = _data_numbers(P.load())
    tables = _md_tables(published_md)
    assert len(tables) == 3
    missing = []
    for title, rows in tables.items():
        for row in rows:
            for cell in row:
                for v in _numbers(cell):
                    if v not in have:
                        missing.append((title, cell, v))
    assert not missing, missing
    # the prose facts too: rank-conditioned win rates, L2 vs CE, AlphaGo's single vs ensemble
    for v in (49.2, 60.1, 67.9, 0.2, 0.005, 55.9, 57.0):
        assert v in have, v


def test_every_published_row_has_an_entry(published_md):
    tables = _md_tables(published_md)
    mp = tables["Move prediction, single network, no search"]
    sources = {r.source for r in P.move_prediction()}
    assert {row[0].replace(" (secondary)", "") for row in mp} == sources
    assert len(P.move_prediction()) == 26  # 13 rows, split into one entry per net, dataset and eval mode
    assert len(P.strength()) == 8 and len(P.accuracy_nats()) == 6 and len(P.rank_conditioning()) == 3
    assert len(P.conventions()) == 4


def test_entries_are_well_formed():
    rows = {r.id: r for r in P.move_prediction()}
    assert rows["maddison_12x128"].top10 == 94.0 and rows["maddison_12x128"].approx == ("top10",)
    assert rows["alphago_13x256"].eval == "single" and rows["alphago_13x256_ensemble"].eval == "ensemble"
    assert rows["alphago_13x256_ensemble"].top1 == 57.0 and rows["alphago_13x256"].top1 == 55.9
    assert rows["darkforest_kgs"].top1 == (57.1, 57.6) and rows["darkforest_kgs"].secondary
    assert rows["gonn_mar2018_kgs_12x192"].dataset.kifunet_preset == "gonn-kgs"
    assert rows["gonn_mar2018_kgs_12x192"].ce == 1.378 and rows["gonn_mar2018_kgs_12x192"].steps == 329_000_000
    for r in rows.values():
        assert r.top1 is not None and r.dataset.spec and r.net and r.inputs
        vals = r.top1 if isinstance(r.top1, tuple) else (r.top1,)
        assert all(20 < v < 70 for v in vals)
    assert P.fmt_pct((57.1, 57.6)) == "57.1-57.6" and P.fmt_params(rows["alphago_13x192"]) == "3,880,489"


def _fake_result(preset=None, ensemble=True) -> dict:
    """A result dict as evaluate() writes it, from hand-made sums (4 positions)."""
    blocks = {}
    for mode, ranks in (("single", [0, 0, 3, 12]), ("ensemble", [0, 0, 1, 5])):
        if mode == "ensemble" and not ensemble:
            continue
        bd = M.Breakdown(362)
        bd.update(np.array(ranks), np.array([0.5, 0.7, 1.5, 3.0]), move_number=[1, 30, 60, 200],
                  player_rank=[8, 8, 7, 7], to_move=[1, 2, 1, 2])
        blocks[mode] = bd.to_dict()
    return {"format": "kifunet-eval", "format_version": 1,
            "run": {"name": "tiny<run>", "model": "maddison_tiny", "feature_set": "maddison", "params": 1234,
                    "step": 10, "positions": 2_500_000},
            "dataset": {"path": "/x", "split": "test", "rows": 4, "evaluated": 4,
                        "spec": {"text": "gnugo-0000.sgf; board 19; split test", "preset": preset}},
            "settings": {"legal_mask": False}, "results": blocks}


def test_tables_put_ours_beside_published(tmp_path):
    res = _fake_result()
    rows = T.comparison_rows([("r.json", res)])
    ours = [r for r in rows if r["ours"]]
    assert [r["eval"] for r in ours] == ["single pass", "8-symmetry ensemble"]
    assert ours[0]["top1"] == "50.0" and ours[1]["top1"] == "50.0"
    assert ours[0]["top4"] == "75.0" and ours[1]["top4"] == "75.0" and ours[0]["top10"] == "75.0"
    assert ours[1]["top10"] == "100.0"
    assert ours[0]["ce"] == f"{(0.5 + 0.7 + 1.5 + 3.0) / 4:.3f}"
    assert ours[0]["dataset"].startswith("gnugo-0000.sgf; board 19; split test")
    assert ours[0]["params"] == "1,234" and ours[0]["steps"] == "2.5M" and "@ step 10" in ours[0]["result"]
    md = T.render([("r.json", res)], "markdown")
    lines = md.split("## Accuracy and nats")[0].splitlines()
    assert sum(1 for ln in lines if ln.startswith("| **ours: tiny<run> @ step 10**")) == 2
    assert sum(1 for ln in lines if ln.startswith("| Maddison et al. 2015 |")) == 5
    assert "| GoNN (GoGoD nets) | 34 | 2.73 | 0 |" in md
    html = T.render([("r.json", res)], "html")
    assert "tiny&lt;run&gt;" in html and '<tr class="ours">' in html and "<td>57.1-57.6</td>" in html
    assert "preset gonn-kgs" not in md
    md2 = T.render([("r.json", _fake_result("gonn-kgs", ensemble=False))], "markdown", which="kgs")
    assert "built with preset gonn-kgs" in md2 and "GoGoD 1900-2014" not in md2.split("## Accuracy")[0]
    with pytest.raises(ValueError):
        T.render([], "latex")


def test_tables_command_reads_run_directories(tmp_path, capsys):
    from kifunet.cli import main

    run = tmp_path / "run1"
    (run / "eval").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    (run / "eval" / "data_test.json").write_text(json.dumps(_fake_result()))
    assert main(["tables", str(run)]) == 0
    out = capsys.readouterr().out
    assert "ours: tiny<run>" in out and "AlphaGo SL 2016" in out
    assert main(["tables", str(run), "--format", "html", "--out", str(tmp_path / "t.html")]) == 0
    assert (tmp_path / "t.html").read_text().count('class="ours"') == 4  # 2 comparison rows + 2 nats rows
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["tables", str(empty)]) == 2
    assert "no eval results" in capsys.readouterr().err
