"""Make the 9x9 engine-game corpus (issue 14): GNU Go and Pachi games, komi 7, every game scored, packed as one
deterministic ``.tar.xz`` with a README.

No archive of real 9x9 games can be had on this project's machine, so these are **engine games**, labelled as
such: ``PB``/``PW`` name the program and its version, the root comment gives both command lines, ``AP`` is
``kifunet:match``. Each pairing below is one ``kifunet match`` (:func:`kifunet.play.match.run_match`): colours
alternate game by game, GNU Go gets a different ``set_random_seed`` every game (``--seed`` + pairing offset),
Pachi a different ``-s`` seed per pairing; results come from GNU Go's ``final_score`` (Chinese rules, area
scoring), so every game has an ``RE``.

====================  =====================================  =====================================  ======
pairing               engine                                 opponent                               weight
====================  =====================================  =====================================  ======
gnugo1-gnugo1         GNU Go 3.8 level 1                     GNU Go 3.8 level 1                     2
gnugo1-gnugo6         GNU Go 3.8 level 1                     GNU Go 3.8 level 6                     2
gnugo6-gnugo10        GNU Go 3.8 level 6                     GNU Go 3.8 level 10                    2
pachi500-gnugo1       Pachi 11.99, 500 playouts              GNU Go 3.8 level 1                     2
pachi1000-gnugo6      Pachi 11.99, 1,000 playouts            GNU Go 3.8 level 6                     2
pachi2000-gnugo10     Pachi 11.99, 2,000 playouts            GNU Go 3.8 level 10                    2
pachi500-pachi2000    Pachi 11.99, 500 playouts (seed A)     Pachi 11.99, 2,000 playouts (seed B)   1
pachi1000-pachi1000   Pachi 11.99, 1,000 playouts (seed A)   Pachi 11.99, 1,000 playouts (seed B)   1
====================  =====================================  =====================================  ======

A pairing plays ``weight * --games-per-weight`` games. Reruns resume (each pairing is a resumable match
directory under ``--work``); ``--pack`` writes the archive and its README from what is there. Pachi comes from
``python scripts/build_pachi.py``.

Usage::

    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --games-per-weight 200 --parallel 2
    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --pack corpora/engine9x9
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
import time
from pathlib import Path

BOARD, KOMI = 9, 7.0
GNUGO = "gnugo --mode gtp --level {level}"
PACHI = "pachi -d 0 -s {seed} -r chinese -t ={playouts} threads=1,pondering=0"
REFEREE = "gnugo --mode gtp --chinese-rules --level 1"

#: name -> (engine command, opponent command, weight, base seed)
PAIRINGS = {
    "gnugo1-gnugo1": (GNUGO.format(level=1), GNUGO.format(level=1), 2, 1000),
    "gnugo1-gnugo6": (GNUGO.format(level=1), GNUGO.format(level=6), 2, 2000),
    "gnugo6-gnugo10": (GNUGO.format(level=6), GNUGO.format(level=10), 2, 3000),
    "pachi500-gnugo1": (PACHI.format(seed=11, playouts=500), GNUGO.format(level=1), 2, 4000),
    "pachi1000-gnugo6": (PACHI.format(seed=12, playouts=1000), GNUGO.format(level=6), 2, 5000),
    "pachi2000-gnugo10": (PACHI.format(seed=13, playouts=2000), GNUGO.format(level=10), 2, 6000),
    "pachi500-pachi2000": (PACHI.format(seed=14, playouts=500), PACHI.format(seed=15, playouts=2000), 1, 7000),
    "pachi1000-pachi1000": (PACHI.format(seed=16, playouts=1000), PACHI.format(seed=17, playouts=1000), 1, 8000),
}


def play(work: Path, games_per_weight: int, parallel: int, only: list[str] | None) -> dict:
    from kifunet.play import match

    timings = {}
    for name, (engine, opponent, weight, seed) in PAIRINGS.items():
        if only and name not in only:
            continue
        cfg = match.MatchConfig(engine=engine, opponent=opponent, games=weight * games_per_weight,
                                board_size=BOARD, komi=KOMI, referee=REFEREE, parallel=parallel,
                                out_dir=str(work / name), move_timeout=120.0, seed=seed)
        t0 = time.monotonic()
        summary = match.run_match(cfg, log=lambda s: None)
        timings[name] = time.monotonic() - t0
        print(f"{name}: {summary.games} games ({len(summary.failed)} failed) in {timings[name]:.0f} s", flush=True)
    log = work / "timings.jsonl"
    with log.open("a") as f:
        f.write(json.dumps({"games_per_weight": games_per_weight, "parallel": parallel, "seconds": timings}) + "\n")
    return timings


def pack(work: Path, dest: Path) -> None:
    """``dest/engine9x9.tar.xz`` (members ``PAIRING/game-NNNN.sgf``, sorted, mtime 0) and ``dest/counts.json``."""
    from kifunet.play.match_sgf import finished_games

    dest.mkdir(parents=True, exist_ok=True)
    counts, members = {}, []
    for name in PAIRINGS:
        d = work / name
        if not d.is_dir():
            continue
        games = finished_games(d)
        counts[name] = {"games": len(games), "black_wins": sum(1 for r in games.values() if r.result.startswith("B+")),
                        "white_wins": sum(1 for r in games.values() if r.result.startswith("W+")),
                        "engine": PAIRINGS[name][0], "opponent": PAIRINGS[name][1]}
        for i in sorted(games):
            p = d / "games" / f"game-{i:04d}.sgf"
            members.append((f"{name}/{p.name}", p.read_bytes()))
    buf = dest / "engine9x9.tar.xz"
    with tarfile.open(buf, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for arc, data in members:
            info = tarfile.TarInfo(arc)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    timings = [json.loads(ln) for ln in (work / "timings.jsonl").read_text().splitlines()] \
        if (work / "timings.jsonl").exists() else []
    (dest / "counts.json").write_text(json.dumps({"pairings": counts, "games": len(members),
                                                  "play_seconds": sum(sum(t["seconds"].values()) for t in timings)},
                                                 indent=1) + "\n")
    print(f"wrote {buf} ({buf.stat().st_size / 1e6:.2f} MB, {len(members)} games) and {dest / 'counts.json'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("runs/engine9x9"), help="match directories (resumable)")
    ap.add_argument("--games-per-weight", type=int, default=0, help="games per unit of a pairing's weight")
    ap.add_argument("--parallel", type=int, default=2, help="games played at once per pairing")
    ap.add_argument("--only", nargs="*", default=None, help="play these pairings only")
    ap.add_argument("--pack", type=Path, default=None, metavar="DIR", help="write DIR/engine9x9.tar.xz")
    a = ap.parse_args(argv)
    if a.games_per_weight:
        play(a.work, a.games_per_weight, a.parallel, a.only)
    if a.pack:
        pack(a.work, a.pack)
    return 0


if __name__ == "__main__":
    sys.exit(main())
