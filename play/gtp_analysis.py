"""GTP analysis for GUIs (``lz-analyze``, ``kata-analyze``, ``*-genmove_analyze``): the argument grammar
(:func:`parse_request`), the candidate rules and the ``info`` lines. Tables and formats: docs/playing.md
(The analysis protocol)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, WHITE

from . import gtp_args

LZ, KATA = "lz", "kata"
DEFAULT_CANDIDATES = 10
DEFAULT_PV_LENGTH = 6
MIN_INTERVAL_CS = 10.0
#: intervals above this (one day) are lowered to it: a longer wait is no different to a GUI, and a timeout
#: beyond ``threading.TIMEOUT_MAX`` would stop the engine
MAX_INTERVAL_CS = 8_640_000.0
#: the largest ``minmoves``, ``maxmoves`` and DEPTH read (more is refused)
MAX_COUNT = 10**6
VISITS_PER_PRIOR = 1000
#: keys accepted with true/false and ignored (docs/playing.md, The analysis protocol)
IGNORED_BOOLEAN_KEYS = ("ownership", "ownershipStdev", "movesOwnership", "movesOwnershipStdev", "pvVisits",
                        "pvEdgeVisits", "rootInfo")
COLOUR_WORDS = {"b": BLACK, "black": BLACK, "w": WHITE, "white": WHITE}
NO_VALUE_NOTE = "no value head: analysis winrate 0.5 is not an estimate"

_NUMBER = re.compile(r"^(\d+(\.\d*)?|\.\d+)$")


def colour_word(s: str) -> int | None:
    """``'B'``/``'black'``/``'w'``/``'White'`` -> BLACK/WHITE; anything else -> None."""
    return COLOUR_WORDS.get(s.strip().lower())


@dataclass(frozen=True)
class MoveRule:
    """One ``avoid`` or ``allow`` of a request: ``points`` (flat indices, pass = N*N) for ``colour`` until ``depth``."""

    allow: bool
    colour: int
    points: frozenset
    depth: int


@dataclass
class AnalyzeRequest:
    """A parsed analysis command (the argument table in ``docs/playing.md``)."""

    fmt: str  # LZ or KATA
    colour: int | None = None  # None: the side to move
    interval_cs: float | None = None  # None: one block, then wait for the next command
    minmoves: int = 0
    maxmoves: int | None = None
    rules: list = field(default_factory=list)  # [MoveRule]
    ignored: list = field(default_factory=list)  # keys accepted and ignored, e.g. ["ownership"]

    @property
    def interval_s(self) -> float | None:
        """Seconds between blocks (``None``: no repeats)."""
        if self.interval_cs is None:
            return None
        return min(max(self.interval_cs, MIN_INTERVAL_CS), MAX_INTERVAL_CS) / 100.0

    def count(self) -> int:
        """How many candidates to show: the default, raised to ``minmoves``, lowered to ``maxmoves``."""
        k = max(DEFAULT_CANDIDATES, self.minmoves)
        return k if self.maxmoves is None else min(k, self.maxmoves)

    def banned(self, colour: int, ply: int, size: int) -> np.ndarray:
        """bool [N*N + 1]: the moves ``avoid``/``allow`` forbid to ``colour`` at ``ply`` (1 = the candidate itself)."""
        out = np.zeros(size * size + 1, dtype=bool)
        for r in self.rules:
            if r.colour != colour or ply > r.depth:
                continue
            pts = np.zeros_like(out)
            pts[list(r.points)] = True
            out |= ~pts if r.allow else pts
        return out


def _number(s: str, what: str) -> float:
    if not _NUMBER.match(s):
        raise ValueError(f"{what} must be a number >= 0, not {gtp_args.shown(s)}")
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be a finite number, not {gtp_args.shown(s)}")
    return v


def _count(s: str, what: str) -> int:
    v = gtp_args.bounded_int(s, MAX_COUNT)
    if v is None:
        raise ValueError(f"{what} must be an integer in 0..{MAX_COUNT}, not {gtp_args.shown(s)}")
    return v


def _rule(key: str, who: str, vertices: str, depth: str, size: int) -> MoveRule:
    colour = colour_word(who)
    if colour is None:
        raise ValueError(f"{key}: not a colour: {who!r}")
    points = set()
    for v in vertices.split(","):
        if v.strip():
            try:
                points.add(coords.to_flat(coords.from_gtp(v, size), size))
            except ValueError:
                raise ValueError(f"{key}: not a vertex on a {size}x{size} board: {v!r}") from None
    d = gtp_args.bounded_int(depth, MAX_COUNT)
    if d is None or d < 1:
        raise ValueError(f"{key}: the depth must be an integer in 1..{MAX_COUNT}, not {gtp_args.shown(depth)}")
    return MoveRule(key == "allow", colour, frozenset(points), d)


def parse_request(fmt: str, args: list[str], size: int) -> AnalyzeRequest:
    """``[colour] [interval] [KEY VALUE ...]`` -> :class:`AnalyzeRequest`; ``ValueError`` says what is wrong."""
    req = AnalyzeRequest(fmt)
    i = 0
    if i < len(args) and colour_word(args[i]) is not None:
        req.colour = colour_word(args[i])
        i += 1
    if i < len(args) and _NUMBER.match(args[i]):
        req.interval_cs = _number(args[i], "interval")
        i += 1
    while i < len(args):
        key = args[i]
        if i + 1 >= len(args):
            raise ValueError(f"{key!r} needs a value")
        value = args[i + 1]
        i += 2
        if key == "interval":
            req.interval_cs = _number(value, "interval")
        elif key == "minmoves":
            req.minmoves = _count(value, key)
        elif key == "maxmoves":
            req.maxmoves = _count(value, key)
        elif key in ("avoid", "allow"):
            if i + 2 > len(args):
                raise ValueError(f"{key} needs COLOUR VERTICES DEPTH")
            rule = _rule(key, value, args[i], args[i + 1], size)
            i += 2
            same = [r for r in req.rules if r.colour == rule.colour]
            if any(r.allow for r in same) or (rule.allow and same):
                raise ValueError("allow: at most once per colour, and not with avoid for that colour")
            req.rules.append(rule)
        elif key in IGNORED_BOOLEAN_KEYS:
            if value.lower() not in ("true", "false"):
                raise ValueError(f"{key} must be true or false, not {value!r}")
            if value.lower() == "true":
                req.ignored.append(key)
        else:
            raise ValueError(f"unknown key {key!r}")
    return req


def visits_for(prior: float) -> int:
    """The visit count written for a move of this prior: ``max(1, round(1000 * prior))``."""
    return max(1, int(round(VISITS_PER_PRIOR * prior)))


def winrate_after(value_for_opponent: float | None) -> float:
    """The mover's winrate in [0, 1] from the net's value of the next position (for the opponent); 0.5 for None."""
    if value_for_opponent is None:
        return 0.5
    return (1.0 - float(np.clip(value_for_opponent, -1.0, 1.0))) / 2.0


@dataclass
class Candidate:
    """One candidate move: its prior, the mover's winrate, the PV (flat indices) and the engine's PV state."""

    move: int
    prior: float
    winrate: float
    pv: list[int]
    state: object = None  # whatever the engine needs to extend the PV (opaque here)
    done: bool = False  # the PV cannot grow (it ended at a pass or with no move left)


def format_candidate(fmt: str, c: Candidate, order: int, size: int) -> str:
    """One ``info move ...`` entry in the lz or kata format (``docs/playing.md``)."""
    vertex = coords.to_gtp(coords.from_flat(c.move, size), size)
    pv = " ".join(coords.to_gtp(coords.from_flat(m, size), size) for m in c.pv)
    visits = visits_for(c.prior)
    if fmt == LZ:
        w, p = int(round(10000 * c.winrate)), int(round(10000 * c.prior))
        return f"info move {vertex} visits {visits} winrate {w} prior {p} lcb {w} order {order} pv {pv}"
    return (f"info move {vertex} visits {visits} utility {2 * c.winrate - 1:.6f} winrate {c.winrate:.6f} "
            f"prior {c.prior:.6f} lcb {c.winrate:.6f} order {order} pv {pv}")


def format_block(fmt: str, candidates: list[Candidate], size: int) -> str:
    """A block: every candidate on one line ending in a newline; ``''`` when there is none (no empty line:
    an empty line would end the GTP response)."""
    if not candidates:
        return ""
    return " ".join(format_candidate(fmt, c, i, size) for i, c in enumerate(candidates)) + "\n"


class AnalysisRun:
    """The blocks of one analysis: :meth:`block` writes the next, first extending each PV by one move with
    ``extend(candidate)`` (the engine's: it appends to ``candidate.pv`` or sets ``done``)."""

    def __init__(self, request: AnalyzeRequest, size: int, candidates: list[Candidate],
                 extend: Callable[[Candidate], None], pv_length: int = DEFAULT_PV_LENGTH):
        self.request = request
        self.size = size
        self.candidates = candidates
        self.extend = extend
        self.pv_length = pv_length
        self.blocks = 0

    @property
    def interval_s(self) -> float | None:
        return self.request.interval_s

    def block(self) -> str:
        if self.blocks:
            for c in self.candidates:
                if not c.done and len(c.pv) < self.pv_length:
                    self.extend(c)
        self.blocks += 1
        return format_block(self.request.fmt, self.candidates, self.size)


def evaluate(policy, moves, colour: int, setup=()) -> tuple[np.ndarray, float | None]:
    """``policy.evaluate``'s ``(probabilities [N*N+1], value or None)``; a value that is not finite counts as
    none."""
    probs, value = policy.evaluate(moves, colour, setup)
    if value is not None and not np.isfinite(value):
        value = None
    return probs, value
