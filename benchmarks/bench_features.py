"""Feature-extraction speed: positions per second, one process, features only (no writing).

Reads every game of a KGS archive in memory (default: the 2017-01 archive, 733 games, 153,800 non-pass
moves), parses it with sgfmill once (timed separately), then replays every game and computes the full stored
planes of each feature set. Compile time (numba) is measured in a separate warm-up and reported apart; run the
script twice to see that a second process loads the compiled kernels from the cache instead of compiling.

    python benchmarks/bench_features.py [--archive PATH] [--sets maddison,alphago,gonn,agz] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tarfile
import time
from pathlib import Path

DEFAULT_ARCHIVE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "kgs" / "KGS-2017_01-19-733-.tar.gz"


def load_records(archive: Path, limit: int | None):
    from kifunet.data_prep.sgf import sgf_io

    records = []
    with tarfile.open(archive) as tf:
        for m in tf:
            if not m.isfile() or not m.name.endswith(".sgf"):
                continue
            data = tf.extractfile(m).read()
            records.append(sgf_io.load_game(data, path=f"{archive.name}:{m.name}"))
            if limit and len(records) >= limit:
                break
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE)
    ap.add_argument("--sets", default="maddison,alphago,gonn,agz")
    ap.add_argument("--limit", type=int, default=None, help="only the first N games")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    t0 = time.perf_counter()
    import numpy as np

    from kifunet.data_prep.planes import features, replay
    from kifunet.data_prep.game import GameRecord

    t_import = time.perf_counter() - t0
    # warm-up: compile (or load from the numba cache) every kernel on a tiny game
    warm = GameRecord.from_moves(19, [(1, 60), (2, 61), (1, 80), (2, 300)])
    t0 = time.perf_counter()
    for name in args.sets.split(","):
        replay.encode_game(warm, features.get(name))
    t_compile = time.perf_counter() - t0

    t0 = time.perf_counter()
    records = load_records(args.archive, args.limit)
    t_parse = time.perf_counter() - t0
    non_pass = sum(int(np.count_nonzero(r.points[r.kinds == 0] != r.size * r.size)) for r in records)
    moves = sum(r.num_moves for r in records)
    print(f"{len(records)} games, {moves} moves ({non_pass} non-pass) parsed in {t_parse:.1f} s "
          f"({moves / t_parse:,.0f} moves/s); import {t_import:.1f} s; warm-up (compile or cache load) "
          f"{t_compile:.1f} s")

    results = {"archive": str(args.archive.name), "games": len(records), "moves": moves, "non_pass_moves": non_pass,
               "parse_s": t_parse, "warmup_s": t_compile, "cpu": os.cpu_count(), "sets": {}}
    for name in args.sets.split(","):
        fs = features.get(name)
        errors = 0
        positions = 0
        c0 = time.process_time()
        w0 = time.perf_counter()
        for r in records:
            try:
                enc = replay.encode_game(r, fs)
                positions += len(enc)
            except Exception:
                errors += 1
        cpu = time.process_time() - c0
        wall = time.perf_counter() - w0
        rate = positions / cpu
        results["sets"][name] = {"planes": fs.num_planes, "stored": fs.num_stored, "positions": positions,
                                 "cpu_s": cpu, "wall_s": wall, "positions_per_cpu_s": rate, "errors": errors}
        print(f"{name:9s} {fs.num_planes:3d} planes: {positions} positions in {cpu:.1f} CPU-s "
              f"-> {rate:,.0f} positions/s per core ({errors} games with errors)")
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
