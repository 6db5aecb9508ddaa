"""Summaries of a built dataset (``kifunet stats``) and of one position (``kifunet inspect``).

:func:`dataset_stats` reads an HDF5 build's manifest, games tables and rank columns (never the planes) into a
JSON-able dict: per split games, positions, rows, shards and bytes; positions by rank; games and positions by
year, result kind, source and time control (``unknown`` where not recorded); the ownership targets by source and,
over the games with territory marks, how often the dead-stone estimate agrees with the marks (:func:`ownership_stats`);
the counted games with a score target (:func:`score_stats`); the build's accounting.
:func:`render_position` draws one row of a split of either container.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from ..coords import from_flat, to_gtp
from ..profiles import SOURCES, TIME_CONTROLS, UNKNOWN_CODE
from .manifest import check_manifest, read_manifest
from ..ranks import UNKNOWN, is_known, rank_to_text
from .game_targets import score_known
from .reader import Reader
from ..results import KIND_CODES, KINDS, parse_result
from ..rules.final_ownership import MARKS
from ..rules.final_ownership import SOURCES as OWNERSHIP_SOURCES


def _rank_key(v: int) -> str:
    return rank_to_text(int(v)) if (is_known(int(v)) or int(v) == UNKNOWN) else f"?{int(v)}"


def _by_code(games: dict, column: str, names: tuple) -> tuple[dict, dict]:
    """(games, positions) by the name of each game's ``column`` code (``unknown``: the unknown code, or a games
    table written before the column), in the order of ``names``."""
    codes = games.get(column)
    if codes is None:
        codes = np.full(len(games.get("positions", [])), UNKNOWN_CODE)
    g, p = Counter(), Counter()
    for c, n in zip(codes, games.get("positions", [])):
        key = names[int(c)] if 0 <= int(c) < len(names) else "unknown"
        g[key] += 1
        p[key] += int(n)
    order = [k for k in (*names, "unknown") if g[k]]
    return {k: g[k] for k in order}, {k: p[k] for k in order}


def dataset_stats(root: str) -> dict:
    m = read_manifest(root)
    check_manifest(m, root, extra=("storage", "symmetries", "counts"))
    out = {"root": root, "features": {k: m["features"][k] for k in ("name", "version", "num_planes", "num_stored")},
           "board_size": m["board_size"], "storage": m["storage"], "symmetries": m["symmetries"],
           "counts": m["counts"], "targets": m.get("targets", True), "splits": {}}
    for split, info in m["splits"].items():
        with Reader(root, split) as r:
            r.verify()  # every shard's columns are read below: check them all first (a missing one included)
            nbytes = sum(os.path.getsize(p) for p in r.shard_paths)
            col = r.column("player_rank")
            if "symmetry" in r.columns:
                col = col[r.column("symmetry") == 0]
            games = r.games()
        v, c = np.unique(col, return_counts=True)
        ranks = Counter({int(a): int(b) for a, b in zip(v, c)})
        years_g, years_p = Counter(), Counter()
        for y, p in zip(games.get("year", []), games.get("positions", [])):
            key = str(int(y)) if int(y) else "unknown"
            years_g[key] += 1
            years_p[key] += int(p)
        if "result_kind" in games:
            kinds = [KINDS[int(k)] for k in games["result_kind"]]
        else:  # a games table written before results were read
            kinds = [parse_result(t).kind for t in games.get("result", [])]
        res_g, res_p = Counter(), Counter()
        for k, p in zip(kinds, games.get("positions", [])):
            res_g[k] += 1
            res_p[k] += int(p)
        by_source = _by_code(games, "source", SOURCES)
        by_time = _by_code(games, "time_control", TIME_CONTROLS)
        positions = info["positions"]
        out["splits"][split] = {
            "games": info["games"], "positions": positions, "rows": info["rows"], "shards": len(info["shards"]),
            "bytes": nbytes, "bytes_per_row": (nbytes / info["rows"]) if info["rows"] else None,
            "positions_by_rank": {_rank_key(k): ranks[k] for k in sorted(ranks, reverse=True)},
            "games_by_year": dict(sorted(years_g.items())),
            "positions_by_year": dict(sorted(years_p.items())),
            "games_by_result": {k: res_g[k] for k in KINDS if res_g[k]},
            "positions_by_result": {k: res_p[k] for k in KINDS if res_g[k]},
            "games_by_source": by_source[0], "positions_by_source": by_source[1],
            "games_by_time_control": by_time[0], "positions_by_time_control": by_time[1],
            "ownership": ownership_stats(games, int(m["board_size"])),
            "score": score_stats(games, int(m["board_size"])),
        }
    return out


def ownership_stats(games: dict, board_size: int) -> dict | None:
    """Games by ownership source (``none``, ``marks``, ``estimate``) and, over the games with marks, the estimate
    against them: ``marks_games``, ``exact_games`` (every point agrees), ``points_agree`` (share of the points).
    None for a games table written before the targets."""
    if "ownership_source" not in games:
        return None
    src = np.asarray(games["ownership_source"])
    agree = np.asarray(games["estimate_agreement"])[src == MARKS].astype(np.int64)
    nn = board_size * board_size
    return {"games_by_source": {k: int(np.count_nonzero(src == i)) for i, k in enumerate(OWNERSHIP_SOURCES)},
            "marks_games": int(agree.size), "exact_games": int(np.count_nonzero(agree == nn)),
            "points_agree": float(agree.sum() / (agree.size * nn)) if agree.size else None}


def score_stats(games: dict, board_size: int) -> dict | None:
    """Games counted to a margin (``counted``) and those of them with a score target (``known``; the others' margin
    is beyond what the board can make: :func:`~kifunet.data_prep.datasets.game_targets.score_known`). None for a
    games table written before results were read."""
    if "result_kind" not in games:
        return None
    kind = np.asarray(games["result_kind"])
    known = score_known(kind, games["margin"], games.get("komi"), board_size)
    return {"counted": int(np.count_nonzero(kind == KIND_CODES["score"])), "known": int(np.count_nonzero(known))}


def format_stats(st: dict) -> str:
    f = st["features"]
    c = st["counts"]
    lines = [f"dataset {st['root']}: features {f['name']} v{f['version']} ({f['num_planes']} planes, "
             f"{f['num_stored']} stored), {st['board_size']}x{st['board_size']}, planes {st['storage']['planes']} "
             f"+ {st['storage']['compression']}, symmetries {st['symmetries']}", ""]
    lines.append(f"{'split':<10}{'games':>10}{'positions':>12}{'rows':>12}{'shards':>8}{'MB':>10}{'B/row':>8}")
    for name, s in st["splits"].items():
        bpr = f"{s['bytes_per_row']:.0f}" if s["bytes_per_row"] else "-"
        lines.append(f"{name:<10}{s['games']:>10,}{s['positions']:>12,}{s['rows']:>12,}{s['shards']:>8}"
                     f"{s['bytes'] / 1e6:>10.1f}{bpr:>8}")
    lines.append("")
    filt, rej = c["filtered"], c["rejected"]
    lines.append(f"records seen {c['seen']:,} = used {c['used']:,} + filtered {sum(filt.values()):,} "
                 f"+ rejected {sum(rej.values()):,}")
    for title, d in (("filtered", filt), ("rejected", rej)):
        for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {title:<9}{k:<40}{v:>10,}")
    p = c["positions"]
    lines.append(f"positions: {p['moves']:,} moves in used games = {p['kept']:,} kept + "
                 f"{sum(p['filtered'].values()):,} dropped by move filters")
    for k, v in sorted(p["filtered"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  dropped  {k:<40}{v:>10,}")
    for name, s in st["splits"].items():
        lines.append("")
        lines.append(f"[{name}] positions by rank of the player to move")
        lines.append("  " + "  ".join(f"{k}: {v:,}" for k, v in s["positions_by_rank"].items()))
        lines.append(f"[{name}] games (positions) by year")
        lines.append("  " + "  ".join(f"{y}: {g:,} ({s['positions_by_year'][y]:,})"
                                      for y, g in s["games_by_year"].items()))
        lines.append(f"[{name}] games (positions) by result")
        lines.append("  " + "  ".join(f"{k}: {g:,} ({s['positions_by_result'][k]:,})"
                                      for k, g in s["games_by_result"].items()))
        for what in ("source", "time_control"):
            lines.append(f"[{name}] games (positions) by {what.replace('_', ' ')}")
            lines.append("  " + "  ".join(f"{k}: {g:,} ({s[f'positions_by_{what}'][k]:,})"
                                          for k, g in s[f"games_by_{what}"].items()))
        lines += _ownership_lines(name, s.get("ownership"), st.get("targets", True))
        sc = s.get("score")
        if sc:
            n = st["board_size"]
            lines.append(f"[{name}] score targets: {sc['known']:,} of {sc['counted']:,} counted games; "
                         f"{sc['counted'] - sc['known']:,} masked, a margin beyond the board ({n}x{n} points + komi)")
    return "\n".join(lines)


def _ownership_lines(name: str, o: dict | None, targets: bool = True) -> list[str]:
    if not targets:
        return [f"[{name}] ownership targets: none (built with --no-targets)"]
    if o is None:
        return [f"[{name}] ownership targets: none (built before kifunet stored them)"]
    out = [f"[{name}] games by ownership target source",
           "  " + "  ".join(f"{k}: {v:,}" for k, v in o["games_by_source"].items())]
    k = o["marks_games"]
    if k:
        out.append(f"[{name}] the dead-stone estimate against the territory marks, {k:,} games: exactly the same "
                   f"in {o['exact_games']:,} ({o['exact_games'] / k:.1%}), points {o['points_agree']:.2%}")
    return out


# ------------------------------------------------------------------------------------------------------------
# one position

#: (mover's stones, opponent's stones) plane names of each feature set that has them, tried in this order
STONE_PLANES = (("stone_colour[0]", "stone_colour[1]"), ("pla_opp_stones[0]", "pla_opp_stones[1]"),
                ("history_8[0]", "history_8[8]"))
#: absolute colours (black, white), each as it stood after that colour's own last move (``qiqiao``)
_COLOUR_PLANES = (("colour_history_4[3]", "colour_history_4[7]"),)


def _without_captured(last: np.ndarray, other: np.ndarray) -> np.ndarray:
    """``other``'s stones less the groups with no liberty beside ``last``'s stones: the board after ``last``'s
    colour moved, when ``other`` is as it stood before that move (the ``qiqiao`` planes)."""
    n = other.shape[0]
    keep = other.copy()
    seen = np.zeros_like(other, dtype=bool)
    for r0 in range(n):
        for c0 in range(n):
            if not other[r0, c0] or seen[r0, c0]:
                continue
            group, stack, free = [], [(r0, c0)], False
            seen[r0, c0] = True
            while stack:
                r, c = stack.pop()
                group.append((r, c))
                for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= rr < n and 0 <= cc < n:
                        if other[rr, cc] and not seen[rr, cc]:
                            seen[rr, cc] = True
                            stack.append((rr, cc))
                        elif not other[rr, cc] and not last[rr, cc]:
                            free = True
            if not free:
                for r, c in group:
                    keep[r, c] = 0
    return keep


def render_position(reader, index: int) -> str:
    """An ASCII board of row ``index`` of a split (X black, O white, ``*`` the move played) and a summary of its
    planes. The game's players come from the games table (HDF5); a TFDS split names the game by its game_id."""
    b = reader.batch([index])
    fs = reader.feature_set
    planes = b["planes"][0]
    n = reader.board_size
    names = fs.plane_names()
    target, to_move = int(b["target"][0]), int(b["to_move"][0])
    board, stones_from = _board_rows(planes, names, to_move, n)
    rc = from_flat(target, n)
    if rc is not None:
        board[rc[0]][rc[1]] = "*"
    cols = "ABCDEFGHJKLMNOPQRST"[:n]
    game = reader.game(int(b["game_index"][0])) if "game_index" in b else None
    lines = [f"{reader.root} [{reader.split}] row {int(b['index'][0])}: "
             + (game["path"] if game is not None else f"game {b['game'][0]}"),
             f"move {int(b['move_number'][0])}: {'black' if to_move == 1 else 'white'} "
             f"({_rank_key(int(b['player_rank'][0]))}, opponent {_rank_key(int(b['opponent_rank'][0]))}) "
             f"played {to_gtp(rc, n)}" + (f"; symmetry {int(b['symmetry'][0])}" if "symmetry" in b else "")]
    if game is not None:
        lines.append(f"{game['black']} ({game['black_rank_text'] or '?'}) vs {game['white']} "
                     f"({game['white_rank_text'] or '?'}), {game['date']}, {game['result']}")
    lines.append("")
    lines.append("    " + " ".join(cols))
    for r in range(n):
        lines.append(f"{n - r:>3} " + " ".join(board[r]) + f" {n - r}")
    lines.append("    " + " ".join(cols))
    if stones_from is None:
        lines.append("(this feature set has no stone planes; stones not shown)")
    lines.append("")
    lines.append(f"{'plane':<24}{'ones':>6}  {'at the move':>11}")
    for k, name in enumerate(names):
        p = planes[:, :, k]
        at = "-" if rc is None else str(int(p[rc[0], rc[1]]))
        lines.append(f"{name:<24}{int(p.sum()):>6}  {at:>11}")
    return "\n".join(lines)


def _board_rows(planes, names: list[str], to_move: int, n: int) -> tuple[list[list[str]], tuple[int, ...] | None]:
    """The stones of a row's ``planes`` as board rows of ``X`` (black), ``O`` (white) and ``.``, and the indices of
    the (mover, opponent) stone planes they came from: ``()`` when read from black/white colour planes, None when
    the feature set has no stone planes (the board is then empty)."""
    pla, opp = ("X", "O") if to_move == 1 else ("O", "X")
    board = [["." for _ in range(n)] for _ in range(n)]
    stones_from = None
    for a, o in STONE_PLANES:
        if a in names and o in names:
            stones_from = (names.index(a), names.index(o))
            break
    for b_name, w_name in _COLOUR_PLANES:
        if stones_from is None and b_name in names and w_name in names:
            black, white = planes[:, :, names.index(b_name)], planes[:, :, names.index(w_name)]
            if to_move == 1:  # white moved last: black as it stood before white's move, less what it captured
                black = _without_captured(white, black)
            else:
                white = _without_captured(black, white)
            for r in range(n):
                for c in range(n):
                    board[r][c] = "X" if black[r, c] else "O" if white[r, c] else "."
            stones_from = ()
    if stones_from:
        for r in range(n):
            for c in range(n):
                if planes[r, c, stones_from[0]]:
                    board[r][c] = pla
                elif planes[r, c, stones_from[1]]:
                    board[r][c] = opp
    return board, stones_from
