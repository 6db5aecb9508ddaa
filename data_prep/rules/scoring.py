"""Area scoring: Tromp-Taylor (every stone alive), and with dead stones removed; result text.

A point scores for a colour if it holds a stone of that colour, or if it is empty and every empty point
connected to it (through empty points) touches stones of that colour only. Empty regions touching both
colours (dame, seki liberties) or neither (an empty board) score for nobody. Komi is added to white.

:func:`area_score` counts every stone on the board as alive (Tromp-Taylor): the fallback referee of ``kifunet
match --referee none``. :func:`score_without` takes the dead stones off first, then counts the same way: Chinese
rules when the players agree on the dead stones, and how GNU Go's ``final_score`` referees. On a finished board
it is what :meth:`kifunet.data_prep.rules.life_death.Estimate.score` (the GTP engine's ``final_score``) counts with the
estimate's dead stones; on an open board that method counts the open regions by the estimate's ownership.
"""

from __future__ import annotations

import numpy as np

from kifunet.data_prep import results
from kifunet.data_prep.rules.board import neighbours_cached
from kifunet.data_prep.game import BLACK, EMPTY, WHITE


def komi_problem(komi: float, board_size: int) -> str | None:
    """Why ``komi`` cannot be a komi on a ``board_size`` board (``None`` when it can): it must be a finite number
    with ``|komi| <= board_size**2`` (no score on the board can exceed the number of its points)."""
    if not np.isfinite(komi):
        return f"komi must be a finite number, not {komi}"
    if abs(komi) > board_size * board_size:
        return f"komi {komi:g} is out of range: at most {board_size * board_size} in size on {board_size}x{board_size}"
    return None


def area_owner(stones: np.ndarray) -> np.ndarray:
    """int8 [N, N]: BLACK / WHITE for points each colour owns by area, EMPTY for dame and neutral points."""
    st = np.asarray(stones, dtype=np.int8)
    n = st.shape[0]
    flat = st.reshape(-1)
    nb = neighbours_cached(n)
    owner = flat.copy()
    seen = np.zeros(n * n, dtype=bool)
    for start in range(n * n):
        if flat[start] != EMPTY or seen[start]:
            continue
        region, stack, touches = [], [start], set()
        seen[start] = True
        while stack:
            p = stack.pop()
            region.append(p)
            for q in nb[p]:
                if q < 0:
                    continue
                v = flat[q]
                if v == EMPTY:
                    if not seen[q]:
                        seen[q] = True
                        stack.append(q)
                else:
                    touches.add(int(v))
        who = touches.pop() if len(touches) == 1 else EMPTY
        owner[region] = who
    return owner.reshape(n, n)


def area_score(stones: np.ndarray, komi: float) -> float:
    """Black's area minus white's area minus komi (positive: black leads)."""
    owner = area_owner(stones)
    return float(np.count_nonzero(owner == BLACK) - np.count_nonzero(owner == WHITE)) - float(komi)


def remove_stones(stones: np.ndarray, dead: np.ndarray) -> np.ndarray:
    """int8 [N, N]: ``stones`` with the points of the bool mask ``dead`` emptied."""
    st = np.array(stones, dtype=np.int8)
    st[np.asarray(dead, dtype=bool)] = EMPTY
    return st


def score_without(stones: np.ndarray, dead: np.ndarray, komi: float) -> float:
    """Area score (black minus white minus ``komi``) after taking the ``dead`` stones off the board."""
    return area_score(remove_stones(stones, dead), komi)


def format_score(score: float) -> str:
    """GTP / SGF result text of a black-minus-white score: ``B+3.5``, ``W+0.5``, ``0`` (jigo)."""
    if score > 0:
        return f"B+{_num(score)}"
    if score < 0:
        return f"W+{_num(-score)}"
    return "0"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def parse_result(text: str) -> tuple[int | None, str]:
    """SGF/GTP result text -> (winner colour or None for jigo, normalised text), read by the one result parser
    (:func:`kifunet.data_prep.results.parse_result`).

    Reads ``B+3.5``, ``W+R``, ``W+Resign``, ``B+T``, ``B+F``, ``0`` / ``Draw`` / ``Jigo``; raises ``ValueError``
    on a result without a winner or a draw (``Void``, GNU Go's ``?`` for a score it could not decide, text that
    is no result).
    """
    r = results.parse_result(text)
    if r.kind == "draw":
        return None, "0"
    if r.kind in results.UNKNOWN_KINDS:
        raise ValueError(f"not a game result: {text!r}")
    t = text.strip()
    return r.winner, t[0].upper() + t[1:]
