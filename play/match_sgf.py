"""Match games on disk: ``DIR/games/game-NNNN.sgf``, one finished game each, written atomically and read back
with sgfmill (the properties and root comment: docs/matches.md)."""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

from sgfmill import sgf

from kifunet.data_prep import coords
from kifunet.data_prep.fileio import atomic
from kifunet.data_prep.game import BLACK, WHITE

from kifunet.data_prep.rules import scoring
from .match_report import GameResult

_GAME_RE = re.compile(r"^game-(\d{4,})\.sgf$")


def game_path(out_dir, index: int) -> Path:
    """``out_dir/games/game-NNNN.sgf``."""
    return Path(out_dir) / "games" / f"game-{index:04d}.sgf"


def write_game(path: Path, res: GameResult, moves, *, board_size: int, komi: float, engine: str, opponent: str,
               names: dict, note: str, opening: str = "") -> None:
    """Write one finished game: ``moves`` [(colour, flat)], ``engine``/``opponent`` their command lines,
    ``names`` their GTP names (``{"engine": ..., "opponent": ...}``), ``note`` how it was scored, ``opening`` where
    the game's first moves came from (the comment's ``opening`` line; none when empty)."""
    n = board_size
    game = sgf.Sgf_game(size=n)
    root = game.get_root()
    root.set("KM", komi)
    root.set("RU", "Chinese")
    engine_name = names.get("engine", "engine")
    opponent_name = names.get("opponent", "opponent")
    root.set("PB", engine_name if res.engine_colour == BLACK else opponent_name)
    root.set("PW", opponent_name if res.engine_colour == BLACK else engine_name)
    root.set("RE", res.result)
    root.set("DT", _dt.date.today().isoformat())
    root.set("GN", f"game {res.index}")
    root.set("AP", ("kifunet", "match"))
    comment = {"engine": engine, "opponent": opponent, "engine_colour": "B" if res.engine_colour == BLACK
               else "W", "ended": res.ended, "moves": res.moves, "seconds": round(res.seconds, 1),
               "engine_genmove_seconds": round(res.think.get("engine", 0.0), 1),
               "opponent_genmove_seconds": round(res.think.get("opponent", 0.0), 1), "scored_by": note or "-",
               **({"opening": opening} if opening else {})}
    root.set("C", "\n".join(f"{k}: {v}" for k, v in comment.items()))
    node = root
    for colour, flat in moves:
        node = node.new_child()
        node.set_move("b" if colour == BLACK else "w", coords.to_sgfmill(coords.from_flat(flat, n), n))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_bytes_atomic(path, game.serialise())


def read_game(path: Path) -> GameResult:
    """A finished game back from its SGF (result, colours, length, ending)."""
    path = Path(path)
    m = _GAME_RE.match(path.name)
    if not m:
        raise ValueError(f"not a match game file: {path}")
    index = int(m.group(1))
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = game.get_root()
    winner, result = scoring.parse_result(root.get("RE"))
    meta = {}
    if root.has_property("C"):
        for line in root.get("C").splitlines():
            k, _, v = line.partition(": ")
            meta[k] = v
    moves = sum(1 for node in game.get_main_sequence()[1:] if node.get_move()[0] is not None)
    ecol = BLACK if meta.get("engine_colour", "B" if index % 2 == 0 else "W") == "B" else WHITE
    think = {k: float(meta[f"{k}_genmove_seconds"]) for k in ("engine", "opponent") if f"{k}_genmove_seconds" in meta}
    return GameResult(index=index, engine_colour=ecol, winner=winner, result=result, moves=moves,
                      ended=meta.get("ended", "?"), seconds=float(meta.get("seconds", "nan")), path=str(path),
                      think=think)


def finished_games(out_dir) -> dict[int, GameResult]:
    """Every game file of a match directory, by index."""
    d = Path(out_dir) / "games"
    out = {}
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if _GAME_RE.match(p.name):
                r = read_game(p)
                out[r.index] = r
    return out
