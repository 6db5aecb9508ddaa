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
