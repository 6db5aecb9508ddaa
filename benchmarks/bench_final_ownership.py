"""The build's ownership targets: the split-half estimate against the full 256-playout one, side by side.

For the games of the given KGS archives that ended by counting, the final position is judged both ways, in
alternation so that load on the machine falls on both alike (:func:`kifunet.data_prep.rules.final_ownership.
estimate_ownership`, and :func:`~kifunet.data_prep.rules.life_death.estimate` with 256 playouts, seed 0). Reported:
milliseconds a game for each and their ratio, the games where the halves disagreed (the full estimate ran), the
games whose owners differ between the two ways, and, for games with KGS's ``TB``/``TW`` marks, how many each way
agrees with exactly.

    python benchmarks/bench_final_ownership.py [--archives A.tar.gz ...] [--limit N] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tarfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KGS = ROOT.parent / "shared" / "data" / "kgs"
DEFAULT_ARCHIVES = ["KGS-2017_01-19-733-.tar.gz", "KGS-2017_04-19-913-.tar.gz", "KGS-2015-19-8133-.tar.gz"]


def counted_games(archive: Path, limit: int):
    """GameRecords of ``archive`` whose result is a count, at most ``limit``."""
    from kifunet.data_prep.sgf import sgf_io

    out = []
    with tarfile.open(archive) as t:
        for m in t:
            if not (m.isfile() and m.name.endswith(".sgf")):
                continue
            try:
                rec = sgf_io.load_game(t.extractfile(m).read(), path=m.name)
            except Exception:  # noqa: BLE001 - a record the build would reject is not a target
                continue
            if rec.info.result_kind == "score":
                out.append(rec)
                if len(out) >= limit:
                    break
    return out


def measure(records) -> dict:
    from kifunet.data_prep.rules import final_ownership as fo
    from kifunet.data_prep.rules import life_death

    t_new = t_full = 0.0
    differ = escalated = marked = exact_new = exact_full = 0
    real_judge = life_death.judge
    for rec in records:
        st, to_move = fo.final_position(rec)
        calls = []
        life_death.judge = lambda *a, **k: (calls.append(k.get("playouts")), real_judge(*a, **k))[1]
        t0 = time.perf_counter()
        new = fo.estimate_ownership(st, to_move)
        t_new += time.perf_counter() - t0
        life_death.judge = real_judge
        escalated += fo.PLAYOUTS in calls
        t0 = time.perf_counter()
        full = life_death.estimate(st, to_move, playouts=fo.PLAYOUTS, seed=fo.SEED).point_owner().reshape(-1)
        t_full += time.perf_counter() - t0
        differ += not np.array_equal(new, full)
        if rec.territory is not None:
            marks = fo.marks_ownership(st, rec.territory)
            marked += 1
            exact_new += bool(np.array_equal(marks, new))
            exact_full += bool(np.array_equal(marks, full))
    n = max(len(records), 1)
    return {"games": len(records), "ms_split_half": round(1000 * t_new / n, 2), "ms_full": round(1000 * t_full / n, 2),
            "ratio_full_over_split_half": round(t_full / max(t_new, 1e-9), 2), "escalated": escalated,
            "owners_differ": differ, "with_marks": marked, "exact_split_half": exact_new, "exact_full": exact_full}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archives", nargs="+", default=DEFAULT_ARCHIVES)
    ap.add_argument("--limit", type=int, default=300, help="counted games an archive (default 300)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "final_ownership.json"))
    args = ap.parse_args()
    from kifunet.data_prep.rules import life_death

    life_death.estimate(np.zeros((9, 9), np.int8), 1, playouts=2)  # load the compiled kernels
    rows = {}
    for a in args.archives:
        rows[a] = measure(counted_games(KGS / a, args.limit))
        print(a, json.dumps(rows[a]), flush=True)
    result = {"load_before": os.getloadavg()[0], "rows": rows, "load_after": os.getloadavg()[0],
              "command": "python benchmarks/bench_final_ownership.py " + " ".join(
                  ["--archives", *args.archives, "--limit", str(args.limit)])}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print("load", result["load_before"], "->", result["load_after"])


if __name__ == "__main__":
    main()
