"""GTP analysis for GUIs: ``lz-analyze``, ``kata-analyze`` and their ``genmove_analyze`` forms (Sabaki, Lizzie).

The engine has no search. An analysis is the net's view of one position: its most probable legal moves with
their prior, a winrate when the net has a value head, and the line the net would play after each move. This
module holds the argument grammar, the candidate rules and the writer of the ``info`` lines;
:class:`kifunet.play.gtp_analyze.AnalysisCommands` answers the commands and
:class:`kifunet.play.gtp_engine.Engine` streams the blocks (``Engine.serve``).

Sources: KataGo's ``GTP_Extensions.md`` (lightvector/KataGo: the argument grammar, both line formats, the
stop rule; it documents Leela Zero's ``lz-analyze`` format too), KataGo's ``cpp/command/gtp.cpp``
(``parseAnalyzeCommand``: what a malformed request is), Sabaki's ``src/modules/enginesyncer.js``
(``parseAnalysis``) and ``@sabaki/gtp``'s ``stream-controller.js``, and Lizzie's ``Leelaz.java`` and
``MoveData.java`` (featurecat/lizzie).

Commands and arguments
----------------------
``lz-analyze [colour] [interval] [KEY VALUE ...]``, the same for ``kata-analyze``, ``lz-genmove_analyze`` and
``kata-genmove_analyze``. ``colour`` (``b``/``black``/``w``/``white``, any case) defaults to the side to move
(after the last move; White first after handicap stones). ``interval`` is in centiseconds.

======================================  ==========================================================================
what the GUIs send                      meaning here
======================================  ==========================================================================
``N lz-analyze 10`` (Lizzie)            Lizzie numbers every command; analyse the side to move, a block every 0.1 s
``lz-analyze B 50`` (Sabaki)            Sabaki sends colour and ``board.analysis_interval`` (default 50)
``kata-analyze W interval 50``          the keyword form of the interval
``kata-analyze B 50 ownership true``    Sabaki asks kata engines for ownership; Lizzie may append it to
                                        ``lz-analyze`` too: accepted, and answered without it (no ownership head)
``lz-analyze 10 avoid b D4,E5 1``       Lizzie's "avoid"; newer Sabaki forks send ``allow b V,V 999``
``kata-genmove_analyze B 50``           Sabaki's engine move when the engine lists a ``genmove_analyze``
======================================  ==========================================================================

==============================================  ==================================================================
KEY VALUE                                       handling
==============================================  ==================================================================
``interval CS``                                 CS >= 0 (a finite number); below :data:`MIN_INTERVAL_CS` it is
                                                raised to it (the blocks repeat the same net output), above
                                                :data:`MAX_INTERVAL_CS` (a day) lowered to it. No interval: one
                                                block, then nothing until the next command (KataGo's default)
``minmoves N``                                  at least N candidates where that many moves are allowed
``maxmoves N``                                  at most N candidates (0: no ``info`` line at all, as KataGo)
``avoid COLOUR V,V,... DEPTH``                  honoured: those moves of COLOUR are left out of the candidates
                                                (ply 1) and of the PV at plies <= DEPTH; may repeat
``allow COLOUR V,V,... DEPTH``                  honoured: only those moves for COLOUR at plies <= DEPTH; once per
                                                colour and not with ``avoid`` for that colour (KataGo's rule)
``ownership``, ``ownershipStdev``,              ``true``/``false``, accepted and ignored: the nets predict no
``movesOwnership``, ``movesOwnershipStdev``,    ownership, there is no search tree (pvVisits) and no root summary
``pvVisits``, ``pvEdgeVisits``, ``rootInfo``
==============================================  ==================================================================

Anything else (an unknown key, a key without its value, a bad number, colour or vertex, DEPTH < 1, a count or
DEPTH above :data:`MAX_COUNT`, a number too large to be finite) is ``? syntax error: ...`` (one line, a long
token shortened) and no analysis starts.

Responses
---------
``lz-analyze`` / ``kata-analyze``: ``=`` (or ``=ID``) on a line of its own, then one *block* at once and one
more every interval: a block is one line holding every candidate, ``info move ... info move ...`` (Lizzie splits
it on ``" info "``, Sabaki on ``info``). The analysis runs until the next input line of any kind (Sabaki sends
``protocol_version``, Lizzie ``name``, some GUIs an empty line); that line ends the response with a blank line
and is then answered as usual (an empty line gets no answer). The ``genmove_analyze`` forms are ordinary
synchronous commands: ``=ID``, one block for the position before the move, ``play VERTEX`` (or ``play pass`` /
``play resign``), blank line; the move is played as ``genmove`` would play it.

One candidate (tokens separated by single spaces: Lizzie splits on ``" "``):

===========  ==================  ==================  =========================================================
key          lz-analyze          kata-analyze        value here
===========  ==================  ==================  =========================================================
``move``     vertex or ``pass``  same                one of genmove's candidates for the analysed colour: a
                                                     legal point that does not fill its own eye, or pass (nets
                                                     with a pass output)
``visits``   integer             integer             ``max(1, round(1000 * prior))`` (:func:`visits_for`): no
                                                     search, so the prior stands in for the visit share, and
                                                     the GUIs' colouring by visits colours by the prior
``utility``  (not written)       float in [-1, 1]    ``2 * winrate - 1`` (KataGo's win/loss utility; no score)
``winrate``  integer 0..10000    float in [0, 1]     value head: ``(1 - v') / 2``, ``v'`` the net's value in
             (units of 0.01%)                        [-1, 1] of the position after the move, for the opponent
                                                     then to move (a one-visit search's winrate); else 0.5
``prior``    integer 0..10000    float in [0, 1]     the net's softmax probability of the move (over all points
                                                     and pass, legal or not: the priors sum to at most 1)
``lcb``      integer 0..10000    float in [0, 1]     equal to ``winrate``: one evaluation has no interval
``order``    0, 1, ...           same                rank by prior (ties: lower flat index), in output order
``pv``       vertices            same                the move, then the net's replies (below), to the line's end
                                                     or the next ``info``
===========  ==================  ==================  =========================================================

All values are for the analysed colour. kata floats are written with six decimals (``0.500000``): always a
decimal point, since Sabaki reads a winrate without one as lz units (KataGo's Sabaki-only ``analyze`` command
exists for that reason), and never an exponent. Not written: ``scoreMean``, ``scoreLead``, ``scoreStdev``,
``scoreSelfplay`` (no net here predicts a score: Sabaki shows no score when ``scoreLead`` is absent and Lizzie
keeps 0, while a made-up ``0.0`` would read as "even game"), ``utilityLcb``, ``ownership``.

Candidates (:func:`kifunet.eval.legality.top_moves`): ``genmove``'s candidates
(:func:`kifunet.play.move_choice.choose_move`, rule 1: legal, not filling the mover's own eye, pass only for nets
with a pass output) that ``avoid``/``allow`` leave, sorted by prior; :data:`DEFAULT_CANDIDATES` of them, raised
to ``minmoves``, lowered to ``maxmoves``. So the order-0 move is the one ``genmove`` plays unless a pass rule
applies.

PV: it deepens by one move per block, as a search's would: block 1 shows each candidate alone, block ``b`` up
to ``b`` moves, up to :data:`DEFAULT_PV_LENGTH`. A reply is ``genmove``'s arg-max choice without its pass rules:
the most probable of the same candidates for the side then to move, honouring ``avoid``/``allow`` at that ply;
the PV ends at a pass or when no move is left. Each extension costs
one net evaluation per candidate (about 1-3 ms for ``pretrained/kgs_cpu_small`` at 19x19 on a CPU).

Winrate without a value head: GTP's analysis formats have no "unknown" value, and both GUIs need a winrate
(Sabaki's parser fails on a candidate without one, Lizzie would show 0%), so every candidate reads 0.5. The
engine says it where a user sees it: ``version`` ends with ``no value head: analysis winrate 0.5 is not an
estimate``, and ``--verbose`` repeats it on stderr at the first analysis.
"""

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
#: keys accepted with true/false and ignored (see the module docstring)
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
    """A parsed analysis command (see the module docstring's argument tables)."""

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
    """The visit count written for a move of this prior (see the module docstring)."""
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
    """One ``info move ...`` entry in the lz or kata format of the module docstring."""
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
    """The blocks of one analysis: :meth:`block` writes the next, first extending each PV by one move.

    ``extend(candidate)`` is the engine's: it appends the next PV move to ``candidate.pv`` or sets ``done``.
    """

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
