"""Area scoring: Tromp-Taylor (every stone alive, :func:`area_score`) and with dead stones removed
(:func:`score_without`); komi goes to white; result text."""

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
    """SGF/GTP result text -> (winner colour or None for jigo, normalised text), by
    :func:`kifunet.data_prep.results.parse_result`; ``ValueError`` on a result without a winner or a draw."""
    r = results.parse_result(text)
    if r.kind == "draw":
        return None, "0"
    if r.kind in results.UNKNOWN_KINDS:
        raise ValueError(f"not a game result: {text!r}")
    t = text.strip()
    return r.winner, t[0].upper() + t[1:]
