"""eval/tables.py: the two-domain table (one net's top-1 on KGS and on professional games, beside AlphaGo Zero's)."""

from __future__ import annotations

import numpy as np

from kifunet.eval import metrics as M
from kifunet.eval import published as P
from kifunet.eval import tables as T


def _result(preset, ranks, ensemble_ranks=None, evaluated=None, name="net1", step=10) -> dict:
    """An eval result as ``kifunet eval`` writes it, single pass and ensemble, from the played moves' ranks."""
    blocks = {}
    for mode in ("single", "ensemble"):
        r = np.array(ranks if mode == "single" else (ensemble_ranks or ranks))
        bd = M.Breakdown(362)
        bd.update(r, np.full(len(r), 1.0), move_number=np.arange(1, len(r) + 1), player_rank=np.full(len(r), 8),
                  to_move=np.ones(len(r), int))
        blocks[mode] = bd.to_dict()
    return {"format": "kifunet-eval", "format_version": 1,
            "run": {"name": name, "model": "tiny", "params": 1234, "step": step, "positions": 2_500_000},
            "dataset": {"path": "/x", "split": "test", "rows": len(ranks), "evaluated": evaluated or len(ranks),
                        "spec": {"text": f"{preset} data", "preset": preset}},
            "settings": {"legal_mask": False}, "results": blocks}


def test_two_domain_rows_pair_kgs_and_professional_results():
    kgs = _result("gonn-kgs", [0, 0, 3, 5], [0, 0, 0, 5])  # single 50%, ensemble 75%
    kgs_slice = _result("gonn-kgs", [0, 0], evaluated=2)  # fewer positions: not the one shown
    fox = _result("fox-pro", [0, 4, 3, 5, 0, 9, 9, 9], [0, 0, 3, 5, 0, 9, 9, 9])  # single 25%, ensemble 37.5%
    other = _result("gonn-kgs", [0, 0], name="net2")  # a KGS result only: no row
    rows = T.two_domain_rows([("k.json", kgs), ("s.json", kgs_slice), ("f.json", fox), ("o.json", other)])
    pub = {r.id: r for r in P.move_prediction()}
    want = [(pub["agz_sl_kgs"].source, P.fmt_pct(pub["agz_sl_kgs"].top1), P.fmt_pct(pub["agz_sl_pro"].top1))]
    assert [(r["result"], r["kgs"], r["pro"]) for r in rows if not r["ours"]] == want
    assert want == [("AlphaGo Zero SL 2017", "60.4", "54.3")] and rows[0]["gap"] == "-6.1"
    ours = [r for r in rows if r["ours"]]
    assert [(r["eval"], r["kgs"], r["pro"], r["gap"]) for r in ours] == [
        ("single pass", "50.0", "25.0", "-25.0"), ("8-symmetry ensemble", "75.0", "37.5", "-37.5")]
    assert ours[0]["result"] == "ours: net1 @ step 10" and ours[0]["net"] == "tiny, 1,234 params"
    assert ours[0]["tests"] == ("KGS: preset gonn-kgs, split test, 4 positions; "
                                "pro: preset fox-pro, split test, 8 positions")
    md = T.render([("k.json", kgs), ("f.json", fox)], "markdown")
    section = md.split("## Two domains")[1].split("## Accuracy and nats")[0]
    assert "| **ours: net1 @ step 10** | tiny, 1,234 params | single pass | 50.0 | 25.0 | -25.0 |" in section
    assert "| AlphaGo Zero SL 2017 | ResNet 20 x 256 | single pass | 60.4 | 54.3 | -6.1 |" in section
    assert "Two domains" in T.render([("k.json", kgs), ("f.json", fox)], "html")
    assert "Two domains" not in T.render([("k.json", kgs), ("o.json", other)], "markdown")  # no pro result


def test_tables_of_the_default_net_name_the_data_in_short_and_describe_it_once_below():
    """`kifunet tables` on the default net: the dataset column holds a short label (preset, split, how much of
    it), each dataset's full spec is one note under the table (never two alike), and the accuracy/nats table
    says which data each of our rows is."""
    from kifunet.data_prep import paths

    results = T.find_results([str(paths.default_net())])
    md = T.render(results, "markdown")
    table, rest = md.split("\n\n- ", 1)
    notes = ["- " + ln if i == 0 else ln for i, ln in enumerate(rest.split("\n\n")[0].splitlines())]
    specs = {res["dataset"]["spec"]["text"] for _, res in results}
    assert len(notes) == len(set(notes)) == len(specs) == 2, notes
    for spec in specs:
        assert sum(spec in n for n in notes) == 1 and spec not in table
    ours = [ln for ln in table.splitlines() if ln.startswith("| **ours")]
    assert len(ours) == 6
    cells = [ln.split(" | ")[1] for ln in ours]
    assert "gonn-kgs test, whole split (954,190 positions) [2]" in cells
    assert "fox-pro test, first 100,000 of 545,569 positions [1]" in cells
    assert notes[0].startswith("- [1] fox-pro test: fox-pro-2012-2019.tar.gz")
    assert notes[1].startswith("- [2] gonn-kgs test: ") and "built with preset gonn-kgs" in notes[1]
    nats = md.split("## Accuracy and nats")[1]
    assert f"| **ours: {paths.DEFAULT_NET} @ step 11719 (8-symmetry ensemble)** | 46.0 | 1.971 | - | gonn-kgs test, " \
           "first 100,000 of 954,190 positions |" in nats


def test_dataset_label_says_how_much_of_the_split():
    res = _result("fox-pro", [0, 1, 2, 3])
    assert T.dataset_label(res) == "fox-pro test, whole split (4 positions)"
    res["dataset"].update(rows=10, evaluated=4, ranges=[[0, 4]])
    assert T.dataset_label(res) == "fox-pro test, first 4 of 10 positions"
    res["dataset"].update(ranges=[[2, 6]])
    assert T.dataset_label(res) == "fox-pro test, 4 of 10 positions"
    res["dataset"]["spec"]["preset"] = None
    assert T.dataset_label(res) == "x test, 4 of 10 positions"
    res["settings"]["as_rank"] = 8
    assert T.result_label("r.json", res, "ensemble") == "net1 as 9d on x test, 4 of 10 positions: 8-symmetry ensemble"


def test_results_told_a_rank_are_told_apart():
    """`kifunet eval --as-rank R` results of one net: each row and legend label names the rank it was told."""
    told = []
    for r in (0, 8):
        res = _result("gonn-kgs", [0, 1])
        res["settings"]["as_rank"] = r
        told.append((f"r{r}.json", res))
    names = [row["result"] for row in T.comparison_rows(told) if row["ours"]]
    assert names[0] == "ours: net1 @ step 10 as 1d" and names[2] == "ours: net1 @ step 10 as 9d", names
