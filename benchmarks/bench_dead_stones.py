"""Dead stones and final scores on real finished games: kifunet's estimate against the recorded results.

Two sources:

* KGS games that ended by two passes and carry a score (``RE[B+3.5]``), from the archives in
  ``../shared/data/kgs`` (default: the 2015 and 2017 ones). KGS writes the territory it counted in the last
  node (``TB``/``TW``; a dead stone's point is the other colour's territory), so the dead stones KGS's players
  agreed on are the stones lying on the other colour's ``TB``/``TW`` points.
* The kept match games against GNU Go (``pretrained/*/match-gnugo10/games/*.sgf``) that ended by two passes:
  their ``RE`` is GNU Go's ``final_score`` (Chinese rules: area, dead stones removed, komi).

For every game the final position is replayed with the project's rules engine and judged by each method of
:func:`kifunet.data_prep.rules.life_death.estimate` (``combined``, ``playouts``, ``benson``) and by the old Tromp-Taylor
count (every stone alive, the baseline). The score is counted the way the game's rules count it:

* ``RU[Japanese]`` (KGS's default): territory = empty points of one colour after the dead stones are removed,
  plus prisoners (stones captured during the game, from the replay, and the dead stones), minus komi ``KM``.
  Handicap stones are setup stones (``AB``) on KGS, so they need no correction under territory counting.
* ``RU[Chinese]``, ``AGA`` and the GNU Go referee: area (:meth:`Estimate.score`) minus komi; KGS gives white
  one point per handicap stone under Chinese rules and ``HA - 1`` under AGA rules (checked here against the
  ``TB``/``TW`` counts: ``kgs_marks`` rows).

Reported per source and method: the share of games whose winner agrees with ``RE``, the share whose margin is
within 2 points, and, where ``TB``/``TW`` exist, agreement with KGS's dead stones (games with exactly the same
dead stones; stones: precision and recall); plus the disagreeing games (listed for the estimate's methods,
counted for the baselines). The ``kgs_marks`` row scores the same positions from KGS's own marks (a check that
the counting rules above reproduce ``RE``).

    python benchmarks/bench_dead_stones.py [--archives A.tar.gz ...] [--match-glob GLOB] [--limit N]
        [--playouts 256] [--out benchmarks/results/dead_stones.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import tarfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KGS = ROOT.parent / "shared" / "data" / "kgs"
DEFAULT_ARCHIVES = ["KGS-2015-19-8133-.tar.gz", "KGS-2017_01-19-733-.tar.gz", "KGS-2017_02-19-525-.tar.gz",
                    "KGS-2017_03-19-717-.tar.gz", "KGS-2017_04-19-913-.tar.gz"]
METHODS = ("combined", "playouts", "benson", "tromp-taylor")
LISTED = ("combined", "playouts", "kgs_marks")  # methods whose disagreeing games the report lists one by one


def final_position(record):
    """(stones int8 [N, N], captures by black, captures by white, colour to move) after replaying ``record``."""
    from kifunet.data_prep.rules.board import Board, rebuild, set_point
    from kifunet.data_prep.game import BLACK, MOVE, WHITE

    n = record.size
    b = Board(n)
    to_move = BLACK
    setup: dict[int, int] = {}
    for kind, colour, point in zip(record.kinds.tolist(), record.colours.tolist(), record.points.tolist()):
        if kind != MOVE:
            setup[point] = colour
            continue
        if setup:  # AB/AW/AE before this move
            for p, c in setup.items():
                set_point(b.B, p, c)
            rebuild(b.B, b.nb)
            setup = {}
        if point != n * n:
            b.play(point, colour)
        to_move = 3 - colour
    return b.stones, b.captures(BLACK), b.captures(WHITE), to_move


def ended_by_two_passes(record) -> bool:
    m = record.moves()
    nn = record.size * record.size
    return len(m) >= 2 and m[-1][1] == nn and m[-2][1] == nn


def kgs_marks(raw: bytes, n: int):
    """int8 [N, N]: KGS's territory marks of the last node (BLACK for TB, WHITE for TW), or None without any."""
    from sgfmill import sgf

    from kifunet.data_prep import coords

    game = sgf.Sgf_game.from_bytes(raw)
    node = game.get_main_sequence()[-1]
    out = np.zeros((n, n), dtype=np.int8)
    found = False
    for prop, colour in (("TB", 1), ("TW", 2)):
        if node.has_property(prop):
            for v in node.get_raw_list(prop):
                rc = coords.from_sgf(v.decode("ascii", "replace"), n)
                if rc is not None:
                    out[rc] = colour
                    found = True
    return out if found else None


def count(stones, dead, caps_b, caps_w, komi, rules, handicap):
    """Score (black minus white) of a position with ``dead`` removed under ``rules`` (see the docstring)."""
    from kifunet.data_prep.rules import scoring

    final = scoring.remove_stones(stones, dead)
    owner = scoring.area_owner(final)
    empty = final == 0
    r = rules.lower()
    if r.startswith("jap") or r.startswith("kor"):
        dead_w = int(np.count_nonzero(dead & (stones == 2)))
        dead_b = int(np.count_nonzero(dead & (stones == 1)))
        tb = int(np.count_nonzero(empty & (owner == 1)))
        tw = int(np.count_nonzero(empty & (owner == 2)))
        return float(tb + caps_b + dead_w - tw - caps_w - dead_b) - komi
    s = scoring.area_score(final, komi)
    if handicap >= 2:
        s -= handicap if r.startswith("chi") else (handicap - 1 if r.startswith("aga") else 0)
    return s


def judge(stones, to_move, playouts, seed=0):
    """dead masks of each method."""
    from kifunet.data_prep.rules import life_death

    out = {}
    for m in METHODS:
        if m == "tromp-taylor":
            out[m] = np.zeros(stones.shape, dtype=bool)
            continue
        t = time.perf_counter()
        est = life_death.estimate(stones, to_move, playouts=playouts if m != "benson" else 0, seed=seed, method=m)
        out[m] = est.dead()
        out[m + "_seconds"] = time.perf_counter() - t
        out[m + "_area"] = est.score(0.0)
    return out


def iter_kgs(archives, limit):
    from kifunet.data_prep.sgf import sgf_io

    for arch in archives:
        path = Path(arch) if os.path.isabs(arch) else KGS / arch
        if not path.exists():
            print(f"skip {path}: not found")
            continue
        with tarfile.open(path) as tf:
            for m in tf:
                if not m.isfile() or not m.name.endswith(".sgf"):
                    continue
                raw = tf.extractfile(m).read()
                try:
                    rec = sgf_io.load_game(raw, path=f"{path.name}:{m.name}")
                except Exception:
                    continue
                info = rec.info
                if info.result_kind != "score" or rec.size != 19 or not ended_by_two_passes(rec):
                    continue
                yield rec, raw
                limit -= 1
                if limit == 0:
                    return


def iter_match(pattern):
    from kifunet.data_prep.sgf import sgf_io

    for f in sorted(glob.glob(str(ROOT / pattern))):
        raw = Path(f).read_bytes()
        if b"ended: two passes" not in raw:
            continue
        rec = sgf_io.load_game(raw, path=os.path.relpath(f, ROOT))
        if rec.info.result_kind != "score":
            continue
        yield rec, raw


def evaluate(source, games, playouts):
    rows = []
    for rec, raw in games:
        info = rec.info
        stones, caps_b, caps_w, to_move = final_position(rec)
        komi = float(info.komi or 0.0)
        rules = info.rules or ("Chinese" if source == "match" else "Japanese")
        recorded = (1 if info.winner == 1 else -1) * float(info.margin)
        j = judge(stones, to_move, playouts)
        row = {"game": info.path, "rules": rules, "komi": komi, "handicap": info.handicap, "recorded": recorded,
               "moves": rec.num_moves, "scores": {}, "dead": {}}
        for m in METHODS:
            row["scores"][m] = count(stones, j[m], caps_b, caps_w, komi, rules, info.handicap)
            row["dead"][m] = int(j[m].sum())
            if m + "_seconds" in j:
                row.setdefault("seconds", {})[m] = round(j[m + "_seconds"], 4)
        marks = kgs_marks(raw, rec.size) if source == "kgs" else None
        if marks is not None:
            kdead = ((stones == 1) & (marks == 2)) | ((stones == 2) & (marks == 1))
            row["scores"]["kgs_marks"] = count(stones, kdead, caps_b, caps_w, komi, rules, info.handicap)
            row["dead"]["kgs_marks"] = int(kdead.sum())
            row["vs_marks"] = {m: {"same": bool((j[m] == kdead).all()), "tp": int((j[m] & kdead).sum()),
                                   "fp": int((j[m] & ~kdead).sum()), "fn": int((~j[m] & kdead).sum())}
                               for m in METHODS}
        rows.append(row)
    return rows


def summarise(rows, methods):
    out = {}
    for m in methods:
        rs = [r for r in rows if m in r["scores"]]
        if not rs:
            continue
        win = [math.copysign(1, r["scores"][m]) == math.copysign(1, r["recorded"]) and r["scores"][m] != 0
               for r in rs]
        close = [abs(r["scores"][m] - r["recorded"]) <= 2 for r in rs]
        s = {"games": len(rs), "winner_agrees": round(sum(win) / len(rs), 4),
             "margin_within_2": round(sum(close) / len(rs), 4),
             "margin_exact": round(sum(abs(r["scores"][m] - r["recorded"]) < 1e-9 for r in rs) / len(rs), 4)}
        vm = [r["vs_marks"][m] for r in rs if "vs_marks" in r and m in r["vs_marks"]]
        if vm:
            tp, fp, fn = (sum(v[k] for v in vm) for k in ("tp", "fp", "fn"))
            s["marks_games"] = len(vm)
            s["same_dead_stones"] = round(sum(v["same"] for v in vm) / len(vm), 4)
            s["dead_precision"] = round(tp / max(1, tp + fp), 4)
            s["dead_recall"] = round(tp / max(1, tp + fn), 4)
        secs = [r["seconds"][m] for r in rs if "seconds" in r and m in r["seconds"]]
        if secs:
            s["median_ms"] = round(1000 * float(np.median(secs)), 1)
        bad = [{"game": r["game"], "recorded": r["recorded"], "ours": r["scores"][m], "dead": r["dead"].get(m),
                "kgs_dead": r["dead"].get("kgs_marks")} for r, w, c in zip(rs, win, close) if not (w and c)]
        s["disagreement_count"] = len(bad)
        if m in LISTED:
            s["disagreements"] = bad
        out[m] = s
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archives", nargs="*", default=DEFAULT_ARCHIVES)
    ap.add_argument("--match-glob", default="pretrained/*/match-gnugo10/games/*.sgf")
    ap.add_argument("--limit", type=int, default=0, help="KGS games per run (0: all that ended by two passes)")
    ap.add_argument("--playouts", type=int, default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dead_stones.json"))
    args = ap.parse_args()
    from kifunet.data_prep.rules import life_death

    playouts = args.playouts or life_death.DEFAULT_PLAYOUTS
    t0 = time.time()
    life_death.estimate(np.zeros((9, 9), np.int8), 1, playouts=2)  # compile / load the kernels
    report = {"playouts": playouts, "load_average": os.getloadavg()}
    kgs_rows = evaluate("kgs", iter_kgs(args.archives, args.limit or -1), playouts)
    match_rows = evaluate("match", iter_match(args.match_glob), playouts)
    report["kgs"] = summarise(kgs_rows, METHODS + ("kgs_marks",))
    report["match"] = summarise(match_rows, METHODS)
    report["seconds"] = round(time.time() - t0, 1)
    report["load_average_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for src in ("kgs", "match"):
        print(f"{src}:")
        for m, s in report[src].items():
            extra = ""
            if "same_dead_stones" in s:
                extra = (f"  same dead {s['same_dead_stones']:.1%} precision {s['dead_precision']:.1%} "
                         f"recall {s['dead_recall']:.1%}")
            ms = f"  {s['median_ms']} ms" if "median_ms" in s else ""
            print(f"  {m:13s} games {s['games']:4d}  winner {s['winner_agrees']:.1%}  within 2 "
                  f"{s['margin_within_2']:.1%}  exact {s['margin_exact']:.1%}{extra}{ms}")
    print(f"{report['seconds']} s; wrote {args.out}")


if __name__ == "__main__":
    main()
