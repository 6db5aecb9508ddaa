"""Write ``eval/probes.sgf``: Go positions that test long-distance understanding, each checked by the rules engine.

``python scripts/make_probes.py [--out eval/probes.sgf]`` (no randomness beyond ``SEED``: the output is the same
bytes on every run; ``tests/test_eval_probes.py`` checks the committed file is what this writes).

Every probe is a hand-designed shape drawn in a canonical frame, given a size and a place on the 19x19 board by a
seeded RNG, then turned by one of the 8 board symmetries; a few background stones in free corners make it look like
a game. The record sets the stones up (``AB``/``AW``), then plays four history moves, the opponent's last one being
the move that made the problem, then the answer: its **final move is the correct answer**, so the position before it
is the probe and the replay pipeline sees the answer as the target. Root properties: ``XC`` the category, ``XA`` every
accepted answer (the final move among them), ``XT`` the key stones the checks read (below), ``GN`` the probe's name.

Categories and the checks (:func:`check`; "mover" is the side to play the answer; "accepted" is recomputed from the
position and must equal ``XA`` exactly):

``ladder``
    ``XT``: the defender's stone, which the opponent has just played (a cut), with 2 liberties. Accepted: each of
    its liberties where the project's ladder reader (``ladders.ladder_attack_works``) says the atari captures it.
    Exactly one direction works (the other atari lets it escape), and the ladder lasts at least 40 moves, so it runs
    about ten lines or more across the board (:func:`ladder_length`: atari, extend, the atari the reader says works,
    until the capture).
``semeai``
    ``XT``: a stone of the mover's chain and one of the opponent's, each >= 6 stones, with no shared liberty and
    2-3 liberties each, the opponent having just filled one of the mover's. Race model (:func:`race_wins`): the
    players alternately fill a liberty of the other's chain (the only moves that change a race without shared
    liberties; every other move is a pass in it); a side wins when it captures the other chain. Checked: with the
    mover to move and passing instead, the opponent (then to move) wins; accepted = the moves on the two chains'
    liberties after which the mover wins with the opponent to move. The walls around the chains have more
    liberties than the race lasts.
``far_defence``
    ``XT``: a stone of the mover's chain (>= 7 stones) whose liberty the opponent has just filled at one end.
    Checked: before the answer the chain can be taken (1 liberty, or 2 and an atari captures it in a ladder);
    accepted = every legal move after which it has 3+ liberties, or 2 and neither atari captures it in a ladder;
    each accepted answer is at least 6 points (Manhattan) from the filled liberty.
``second_eye``
    ``XT``: a stone of the mover's chain (>= 15 stones, along the edge; the shape walls it in, not checked). Eyes are
    counted with the rules engine's ``analysis.is_eye`` (all four neighbours the mover's; diagonals: none of the
    opponent's on the edge, at most one in the middle) over the chain's liberties. Checked: the opponent's last
    move is diagonal to a point that is now a false eye (all neighbours the mover's, ``is_eye`` false), the chain has
    exactly one eye; accepted = every legal move after which it has two; if the opponent plays there instead it still
    has at most one; each accepted answer is at least 6 points from the falsifying move.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, WHITE
from kifunet.data_prep.rules import analysis, ladders
from kifunet.data_prep.rules.board import S, Board, rebuild, set_point

N = 19
SEED = 20261127
PER_CATEGORY = 12
CATEGORIES = ("ladder", "semeai", "far_defence", "second_eye")
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "eval", "probes.sgf")
_SCRATCH = ladders.scratch(N)
LETTERS = {BLACK: "B", WHITE: "W"}


# ------------------------------------------------------------------------------------------------ board helpers
def sym(k: int, rc: tuple[int, int]) -> tuple[int, int]:
    """Board symmetry ``k`` (0..7) of point (row, col): transpose if k >= 4, then flip rows / cols by bits 0, 1."""
    r, c = rc
    if k & 4:
        r, c = c, r
    if k & 1:
        r = N - 1 - r
    if k & 2:
        c = N - 1 - c
    return r, c


def board_of(stones: dict[int, int]) -> Board:
    b = Board(N)
    for p, c in stones.items():
        set_point(b.B, p, c)
    rebuild(b.B, b.nb)
    return b


def libs_of(b: Board, p: int) -> list[int]:
    out = set()
    for q in b.chain(p):
        for k in range(4):
            r = int(b.nb[q, k])
            if r >= 0 and b.B[S, r] == 0:
                out.add(r)
    return sorted(out)


def after(b: Board, p: int, colour: int) -> Board | None:
    """A copy of ``b`` with ``colour`` played at ``p``; None if illegal."""
    if not b.is_legal(p, colour):
        return None
    c = b.copy()
    c.play(p, colour)
    return c


def ladder_works(b: Board, stone: int, lib: int) -> bool:
    return bool(ladders.ladder_attack_works(b.B, b.nb, stone, lib, ladders.LADDER_BUDGET, *_SCRATCH))


def manhattan(p: int, q: int) -> int:
    return abs(p // N - q // N) + abs(p % N - q % N)


def legal_points(b: Board, colour: int) -> list[int]:
    return [p for p in range(N * N) if b.is_legal(p, colour)]


# ------------------------------------------------------------------------------------------------ checks
class ProbeError(ValueError):
    pass


def _need(ok: bool, why: str) -> None:
    if not ok:
        raise ProbeError(why)


def ladder_length(b: Board, stone: int, lib: int) -> int:
    """Moves of the ladder after the atari at ``lib``: the defender extends, the attacker ataris at whichever
    liberty the reader says works, until the chain is captured (both sides' moves counted, the first atari too)."""
    defender = int(b.B[S, stone])
    c, moves = b.copy(), 0
    c.play(lib, 3 - defender)
    moves += 1
    while c.B[S, stone] != 0 and moves < 200:
        (last,) = libs_of(c, stone)
        if not c.is_legal(last, defender):
            break
        c.play(last, defender)
        moves += 1
        two = libs_of(c, stone)
        if len(two) != 2:
            break
        nxt = [q for q in two if ladder_works(c, stone, q)]
        if not nxt:
            break
        c.play(nxt[0], 3 - defender)
        moves += 1
    return moves


def race_wins(b: Board, me: int, mine: int, theirs: int) -> bool:
    """Race model (module docstring): ``me`` to move; does it capture chain ``theirs`` before chain ``mine`` goes?"""
    for m in libs_of(b, theirs):
        c = after(b, m, me)
        if c is None:
            continue
        if c.B[S, theirs] == 0 or not race_wins(c, 3 - me, theirs, mine):
            return True
    return False


def eyes(b: Board, stone: int) -> int:
    c = int(b.B[S, stone])
    return sum(bool(analysis.is_eye(b.B, b.nb, N, p, c)) for p in libs_of(b, stone))


def _safe(b: Board, stone: int) -> bool:
    if b.B[S, stone] == 0:
        return False
    libs = libs_of(b, stone)
    return len(libs) >= 3 or (len(libs) == 2 and not any(ladder_works(b, stone, q) for q in libs))


def accepted(category: str, b: Board, mover: int, keys: list[int], last: int) -> list[int]:
    """Check the probe position ``b`` (``mover`` to play, ``last`` the opponent's last move) and return its accepted
    answers (sorted flat indices); ProbeError says which check failed."""
    opp = 3 - mover
    if category == "ladder":
        (d,) = keys
        _need(b.B[S, d] == opp and d == last, "the key stone is not the opponent's last move")
        libs = libs_of(b, d)
        _need(len(libs) == 2, f"the cutting stone has {len(libs)} liberties, not 2")
        ok = [q for q in libs if ladder_works(b, d, q)]
        _need(len(ok) == 1, f"{len(ok)} ataris capture in a ladder, not exactly 1")
        _need(ladder_length(b, d, ok[0]) >= 40, "the ladder is shorter than 40 moves")
        return ok
    if category == "semeai":
        mine, theirs = keys
        _need(b.B[S, mine] == mover and b.B[S, theirs] == opp, "key stones of the wrong colours")
        _need(min(len(b.chain(mine)), len(b.chain(theirs))) >= 6, "a racing chain has fewer than 6 stones")
        lm, lt = libs_of(b, mine), libs_of(b, theirs)
        _need(not set(lm) & set(lt), "the chains share a liberty")
        _need(2 <= len(lm) <= 3 and 2 <= len(lt) <= 3, "a chain has not 2-3 liberties")
        _need(last in {q for p in b.chain(mine) for q in b.nb[p] if q >= 0}, "the last move is not on the mover's chain")
        _need(race_wins(b, opp, theirs, mine), "the race does not need the mover's move")
        for chain in (mine, theirs):  # the walls around: more liberties than the race lasts
            walls = {int(b.B[1, q]) for p in b.chain(chain) for q in b.nb[p] if q >= 0 and b.B[S, q] == 3 - b.B[S, chain]}
            for h in walls:
                _need(h in (b.B[1, mine], b.B[1, theirs]) or len(libs_of(b, h)) > len(lm) + len(lt),
                      "a wall chain is short of liberties")
        ok = []
        for m in sorted(set(lm) | set(lt)):
            c = after(b, m, mover)
            if c is not None and c.B[S, mine] != 0 and (c.B[S, theirs] == 0 or not race_wins(c, opp, theirs, mine)):
                ok.append(m)
        _need(bool(ok), "no move wins the race")
        return ok
    if category == "far_defence":
        (s,) = keys
        _need(b.B[S, s] == mover and len(b.chain(s)) >= 7, "the key chain is not the mover's, or under 7 stones")
        _need(last in {q for p in b.chain(s) for q in b.nb[p] if q >= 0}, "the last move is not next to the chain")
        _need(not _safe(b, s), "the chain is not in danger")
        ok = [m for m in legal_points(b, mover) if _safe(after(b, m, mover), s)]
        _need(bool(ok) and min(manhattan(m, last) for m in ok) >= 6, "no far defence")
        return ok
    if category == "second_eye":
        (s,) = keys
        _need(b.B[S, s] == mover and len(b.chain(s)) >= 15, "the key chain is not the mover's, or under 15 stones")
        false_eyes = [p for p in range(N * N) if b.B[S, p] == 0
                      and all(q < 0 or b.B[S, q] == mover for q in b.nb[p])
                      and not analysis.is_eye(b.B, b.nb, N, p, mover)]
        _need(any(abs(p // N - last // N) == 1 and abs(p % N - last % N) == 1 for p in false_eyes),
              "the last move falsifies no eye")
        _need(eyes(b, s) == 1, f"the chain has {eyes(b, s)} eyes, not 1")
        ok = [m for m in legal_points(b, mover) if eyes(after(b, m, mover), s) >= 2]
        _need(bool(ok) and min(manhattan(m, last) for m in ok) >= 6, "no far second eye")
        for m in ok:
            c = after(b, m, opp)
            _need(c is None or c.B[S, s] == 0 or eyes(c, s) <= 1, "the opponent playing the answer leaves two eyes")
        return ok
    raise ProbeError(f"unknown category {category!r}")


# ------------------------------------------------------------------------------------------------ shapes
# Each builder returns (stones in the canonical frame {(r, c): 'M' | 'O'}, problem move (r, c), keys [(r, c)]),
# 'M' the mover, 'O' the opponent; the problem move is one of the stones.

def _ladder(rng):
    r0, c0 = rng.randint(2, 6), rng.randint(2, 6)
    st = {(r0, c0): "O", (r0 - 1, c0): "M", (r0, c0 - 1): "M", (r0 - 1, c0 + 1): "M"}
    # context: the attacker's stones behind, the defender's group the cut aims at
    st[(r0 - 1, c0 + 2)] = "M"
    st[(r0 + 1, c0 - 2)] = "M" if rng.random() < 0.5 else "O"
    st[(r0 - 2, c0 - 1)] = "O"
    st[(r0 - 2, c0 + 2)] = "O"
    # a far defender stone off the ladder's path (it must not break the ladder: the reader checks)
    k = rng.randint(6, min(11, 18 - r0, 14 - c0))
    st[(r0 + k, c0 + k + rng.choice((3, 4)))] = "O"
    return st, (r0, c0), [(r0, c0)]


def _semeai(rng):
    k = rng.randint(6, 10)
    L = rng.randint(2, 3)
    r0, c0 = rng.randint(2, 18 - 6), rng.randint(2, 17 - k)
    c1 = c0 + k - 1
    R1, R2, R3, R4 = r0, r0 + 1, r0 + 2, r0 + 3
    cols = list(range(c0 + 1, c1))
    gx = sorted(rng.sample(cols, L + 1))   # the mover's liberties (one the opponent fills)
    go = sorted(rng.sample(cols, L))       # the opponent's liberties
    st = {}
    for c in range(c0 - 1, c1 + 2):
        if c not in gx:
            st[(R1, c)] = "O"
        if c not in go:
            st[(R4, c)] = "M"
    for c in range(c0, c1 + 1):
        st[(R2, c)] = "M"
        st[(R3, c)] = "O"
    st[(R2, c0 - 1)] = st[(R2, c1 + 1)] = "O"
    st[(R3, c0 - 1)] = st[(R3, c1 + 1)] = "M"
    fill = rng.choice(gx)
    st[(R1, fill)] = "O"
    return st, (R1, fill), [(R2, c0), (R3, c0)]


def _far_defence(rng):
    k = rng.randint(7, 11)
    R = rng.randint(3, 15)
    c0 = rng.randint(2, 16 - k - 3)
    c1 = c0 + k - 1
    st = {}
    for c in range(c0, c1 + 1):
        st[(R, c)] = "M"
    shortage = rng.random() < 0.5
    gap = c0 + 1 if shortage else None
    if shortage:
        st[(R - 2, gap)] = "O"  # the gap is a dead end: extending into it is no escape
    for c in range(c0 - 1, c1 + 1):
        if c != gap:
            st[(R - 1, c)] = "O"
        st[(R + 1, c)] = "O"
    st[(R, c0 - 1)] = "O"  # the problem move: the liberty at the far end
    kind = rng.choice(("extend", "connect"))
    if kind == "connect":
        st[(R, c1 + 2)] = "M"
        st[(R - 1, c1 + 3)] = "M"
        st[(R + 1, c1 + 2)] = "M"
    else:
        st[(R - 2, c1 + 3)] = "M"
    return st, (R, c0 - 1), [(R, c0)]


def _second_eye(rng):
    k = rng.randint(10, 13)
    c0 = rng.randint(3, 17 - k - 1)
    c1 = c0 + k - 1
    m = rng.randint(c0 + 3, c1 - 4)
    st = {}
    for c in range(c0, c1 + 1):
        st[(1, c)] = "M"
    for c in range(c0 + 1, c1 - 1):
        if c != m:
            st[(0, c)] = "M"
    st[(0, c0 - 1)] = "M"  # the hane on the first line
    st[(0, c1 + 1)] = st[(1, c1 + 1)] = "O"
    for c in range(c0 - 2, c1 + 2):
        st[(2, c)] = "O"
    st[(1, c0 - 2)] = "O"
    st[(1, c0 - 1)] = "O"  # the problem move: falsifies the eye at (0, c0)
    return st, (1, c0 - 1), [(1, c0)]


BUILDERS = {"ladder": _ladder, "semeai": _semeai, "far_defence": _far_defence, "second_eye": _second_eye}

# background, so that the board looks like a game past its opening: settled corner shapes (row, col from the corner;
# 0 the corner's owner, 1 the other side) and single stones on the sides, each kept 5+ points from every other stone
CORNERS = (
    ((3, 3, 0), (2, 5, 0)),                        # 4-4 point and knight's enclosure
    ((2, 3, 0), (4, 2, 0)),                        # 3-4 point and knight's enclosure
    ((3, 3, 0), (5, 2, 1), (2, 5, 0), (8, 2, 1)),  # 4-4 point, approach, knight's move, extension
    ((2, 3, 0), (3, 5, 0), (3, 2, 0), (2, 8, 1)),  # 3-4 point, enclosure, and a side stone
)
SIDES = ((3, 9), (2, 9), (3, 10), (2, 11))


def _background(rng, stones: dict[int, int]) -> None:
    def free(pts):
        return all(p not in stones and min(manhattan(p, q) for q in stones) >= 5 for p, _ in pts)

    for corner in rng.sample(range(8), 8):  # the 4 corners, each in both of its orientations
        pattern, owner = rng.choice(CORNERS), rng.choice((BLACK, WHITE))
        pts = [(coords.to_flat(sym(corner, (r, c)), N), owner if who == 0 else 3 - owner) for r, c, who in pattern]
        if free(pts):
            stones.update(pts)
    for side in rng.sample(range(8), 8):
        pts = [(coords.to_flat(sym(side, rng.choice(SIDES)), N), rng.choice((BLACK, WHITE)))]
        if free(pts):
            stones.update(pts)


def build(category: str, rng: random.Random) -> dict:
    """One checked probe of ``category`` (retries with the same RNG until the checks pass)."""
    for _ in range(500):
        canon, problem, keys = BUILDERS[category](rng)
        k = rng.randrange(8)
        mover = rng.choice((BLACK, WHITE))
        colour = {"M": mover, "O": 3 - mover}
        stones = {coords.to_flat(sym(k, rc), N): colour[v] for rc, v in canon.items()}
        last = coords.to_flat(sym(k, problem), N)
        keyp = [coords.to_flat(sym(k, rc), N) for rc in keys]
        shape = dict(stones)
        _background(rng, stones)
        try:
            b = board_of(stones)
            _need(all(b.liberties(p) > 0 for p in stones), "a chain without liberties")
            answers = accepted(category, b, mover, keyp, last)
        except ProbeError:
            continue
        # history: mover, opponent, stones of the shape (not of the key chains where it has enough), then the problem move
        key_chains = {q for p in keyp for q in b.chain(p)}
        pool = {c: sorted(p for p, v in shape.items() if v == c and p not in key_chains and p != last)
                for c in (BLACK, WHITE)}
        for c, need in ((mover, 2), (3 - mover, 1)):
            if len(pool[c]) < need:  # too few: the key chains' stones too
                pool[c] = sorted(p for p, v in shape.items() if v == c and p != last)
        m1, m2 = rng.sample(pool[mover], 2)
        history = [(m1, mover), (rng.choice(pool[3 - mover]), 3 - mover), (m2, mover), (last, 3 - mover)]
        answer = rng.choice(answers)
        return {"category": category, "stones": stones, "history": history, "answer": answer,
                "answers": answers, "keys": keyp, "mover": mover}
    raise RuntimeError(f"no {category} probe passed its checks in 500 tries")


def probes(seed: int = SEED, per_category: int = PER_CATEGORY) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for cat in CATEGORIES:
        for i in range(per_category):
            p = build(cat, rng)
            p["name"] = f"{cat}-{i + 1:02d}"
            out.append(p)
    return out


def _pt(p: int) -> str:
    return "[" + coords.to_sgf(coords.from_flat(p, N), N) + "]"


def to_sgf(p: dict) -> str:
    moved = {q for q, _ in p["history"]}
    setup = {c: sorted(q for q, v in p["stones"].items() if v == c and q not in moved) for c in (BLACK, WHITE)}
    root = (f"(;GM[1]FF[4]CA[UTF-8]SZ[{N}]KM[7.5]GN[{p['name']}]XC[{p['category']}]"
            f"XA{''.join(_pt(q) for q in p['answers'])}XT{''.join(_pt(q) for q in p['keys'])}"
            f"\nAB{''.join(_pt(q) for q in setup[BLACK])}\nAW{''.join(_pt(q) for q in setup[WHITE])}\n")
    moves = "".join(f";{LETTERS[c]}{_pt(q)}" for q, c in p["history"]) + f";{LETTERS[p['mover']]}{_pt(p['answer'])}"
    return root + moves + ")\n"


def render(ps: list[dict]) -> str:
    return "".join(to_sgf(p) for p in ps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="where to write the collection (default eval/probes.sgf)")
    args = ap.parse_args(argv)
    ps = probes()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(render(ps))
    counts = {c: sum(p["category"] == c for p in ps) for c in CATEGORIES}
    print(f"wrote {args.out}: {len(ps)} probes " + ", ".join(f"{c} {n}" for c, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
