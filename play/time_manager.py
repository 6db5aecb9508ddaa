"""The clock: GTP's time systems, a per-move budget, and how many board symmetries a move can afford (k
evaluations of the policy instead of one). Reads no clock itself: every decision is a pure function of its
arguments. The time systems and the budget's rules: docs/playing.md (The clock)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .gtp_args import shown

#: symmetries of the square board (4 rotations x reflection)
MAX_SYMMETRIES = 8
#: the symmetries the engine measures when time settings arrive (so that a timed genmove can use them)
WARM_SYMMETRIES = 8
#: seconds kept back from every budget for the controller, the pipe and the engine's own work around the net
LAG_S = 0.1
#: the fraction of a move's share of the clock that the engine allows itself
SAFETY = 0.5

NONE, ABSOLUTE, CANADIAN, BYOYOMI = "none", "absolute", "canadian", "byoyomi"


@dataclass(frozen=True)
class TimeSettings:
    """One time system: ``kind`` (none, absolute, canadian, byoyomi), ``main`` seconds, then for ``canadian``
    ``stones`` stones in ``period`` seconds, for ``byoyomi`` ``periods`` periods of ``period`` seconds."""

    kind: str = NONE
    main: float = 0.0
    period: float = 0.0
    stones: int = 0
    periods: int = 0

    @property
    def unlimited(self) -> bool:
        return self.kind == NONE


@dataclass
class Clock:
    """One side's clock: ``time`` seconds left (in main time, or in the current byo-yomi period) and
    ``stones`` (0: main time; Canadian: stones left in the period; Japanese: periods left)."""

    time: float
    stones: int = 0


def _number(s: str, what: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise ValueError(f"{what} must be a number of seconds, not {shown(s)}") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{what} must be a finite number of seconds >= 0, not {s if len(s) <= 40 else shown(s)}")
    return v


def _count(s: str, what: str) -> int:
    if not (s.isascii() and s.isdigit()):
        raise ValueError(f"{what} must be a whole number >= 0, not {shown(s)}")
    if len(s.lstrip("0")) > 9:
        raise ValueError(f"{what} must be at most 999999999, not {shown(s)}")
    return int(s)


def parse_time_settings(args: list[str]) -> TimeSettings:
    """``time_settings MAIN BYO_TIME BYO_STONES`` -> settings; ValueError naming the problem."""
    if len(args) != 3:
        raise ValueError("time_settings takes main_time byo_yomi_time byo_yomi_stones")
    main, period = _number(args[0], "main time"), _number(args[1], "byo-yomi time")
    stones = _count(args[2], "byo-yomi stones")
    if period > 0 and stones == 0:
        return TimeSettings(NONE)
    if period == 0:
        return TimeSettings(ABSOLUTE, main)
    return TimeSettings(CANADIAN, main, period, stones)


def parse_kgs_time_settings(args: list[str]) -> TimeSettings:
    """``kgs-time_settings none | absolute MAIN | byoyomi MAIN PERIOD PERIODS | canadian MAIN BYO STONES``."""
    if not args:
        raise ValueError("kgs-time_settings takes a time system: none, absolute, byoyomi or canadian")
    kind, rest = args[0].lower(), args[1:]
    wanted = {NONE: 0, ABSOLUTE: 1, BYOYOMI: 3, CANADIAN: 3}
    if kind not in wanted:
        raise ValueError(f"unknown time system {args[0]!r} (none, absolute, byoyomi, canadian)")
    if len(rest) != wanted[kind]:
        raise ValueError(f"kgs-time_settings {kind} takes {wanted[kind]} numbers, not {len(rest)}")
    if kind == NONE:
        return TimeSettings(NONE)
    main = _number(rest[0], "main time")
    if kind == ABSOLUTE:
        return TimeSettings(ABSOLUTE, main)
    period = _number(rest[1], "period time")
    count = _count(rest[2], "periods" if kind == BYOYOMI else "stones")
    if kind == BYOYOMI:
        if period == 0 or count == 0:  # no byo-yomi at all: absolute
            return TimeSettings(ABSOLUTE, main)
        return TimeSettings(BYOYOMI, main, period, periods=count)
    if period == 0 or count == 0:
        return TimeSettings(ABSOLUTE, main)
    return TimeSettings(CANADIAN, main, period, stones=count)


def parse_time_left(args: list[str]) -> tuple[str, float, int]:
    """``time_left COLOUR TIME STONES`` -> (colour word, seconds, stones); a negative time (a player over time,
    as some servers report it) reads as 0."""
    if len(args) != 3:
        raise ValueError("time_left takes colour time stones")
    try:
        t = float(args[1])
    except ValueError:
        raise ValueError(f"time must be a number of seconds, not {shown(args[1])}") from None
    if not math.isfinite(t):
        raise ValueError(f"time must be finite, not {args[1] if len(args[1]) <= 40 else shown(args[1])}")
    return args[0], max(0.0, t), _count(args[2], "stones")


def initial_clock(s: TimeSettings) -> Clock | None:
    """A side's clock at the start of a game (None: unlimited)."""
    if s.unlimited:
        return None
    if s.main > 0 or s.kind == ABSOLUTE:
        return Clock(s.main, 0)
    if s.kind == CANADIAN:
        return Clock(s.period, s.stones)
    return Clock(s.period, s.periods)


def moves_to_go(board_size: int, moves_played: int) -> float:
    """How many more moves the engine expects to make: half of what is left of a game of ``0.75*N*N`` moves
    (270 at 19x19), never fewer than ``N*N/16``."""
    nn = board_size * board_size
    return max(nn / 16, (0.75 * nn - moves_played) / 2)


def _byo_move(s: TimeSettings) -> float:
    """The seconds a move gets once in byo-yomi, from a fresh period."""
    if s.kind == CANADIAN:
        return s.period / max(1, s.stones)
    if s.kind == BYOYOMI:
        return s.period
    return 0.0


def move_budget(s: TimeSettings, clock: Clock | None, *, board_size: int, moves_played: int) -> float | None:
    """Seconds the next move may take (its share of the clock, minus :data:`LAG_S`, times :data:`SAFETY`);
    None without a time limit."""
    if s.unlimited or clock is None:
        return None
    if clock.stones == 0:  # main time (or absolute)
        share = clock.time / moves_to_go(board_size, moves_played)
        if s.kind in (CANADIAN, BYOYOMI):  # running into byo-yomi costs nothing but entering it
            share = max(share, _byo_move(s))
        raw = share
    elif s.kind == CANADIAN:
        raw = clock.time / clock.stones
    else:  # Japanese byo-yomi: the current period
        raw = clock.time
    return max(0.0, (raw - LAG_S) * SAFETY)


def choose_symmetries(budget_s: float | None, costs: dict[int, float], *, unlimited: int = 1,
                      max_k: int = MAX_SYMMETRIES) -> int:
    """How many symmetries genmove averages: ``unlimited`` without a time limit; else the largest measured k
    (``costs``: k -> seconds of a call with k symmetries) in 1..``max_k`` whose cost fits the budget; 1 when
    none fits or nothing is measured."""
    if budget_s is None:
        return max(1, min(max_k, unlimited))
    fits = [k for k, cost in costs.items() if 1 <= k <= max_k and cost <= budget_s]
    return max(fits, default=1)


def after_move(s: TimeSettings, clock: Clock, seconds: float) -> Clock:
    """The clock after a move that took ``seconds`` (the rules of the time system; a clock past its end stays
    at 0 time)."""
    t, stones = clock.time - seconds, clock.stones
    if stones == 0:
        if t >= 0 or s.kind == ABSOLUTE:
            return Clock(max(0.0, t), 0)
        over = -t  # main time ran out during the move: the rest comes off the first period
        if s.kind == CANADIAN:
            return after_move(s, Clock(s.period, s.stones), over)
        return after_move(s, Clock(s.period, s.periods), over)
    if s.kind == CANADIAN:
        if t < 0:
            return Clock(0.0, stones)
        if stones == 1:
            return Clock(s.period, s.stones)  # the period's stones are played: a fresh period
        return Clock(t, stones - 1)
    # Japanese: a move within the period keeps it whole; each period overrun costs one
    if t >= 0:
        return Clock(s.period, stones)
    lost = 1 + int(-t // s.period) if s.period > 0 else stones
    left = stones - lost
    return Clock(s.period, left) if left > 0 else Clock(0.0, 1)


@dataclass
class TimeManager:
    """The engine's clocks and measured speed; :meth:`symmetries` decides the next genmove's.
    ``unlimited``: the symmetries without a time limit (default 1)."""

    unlimited: int = 1
    settings: TimeSettings = field(default_factory=TimeSettings)
    clocks: dict = field(default_factory=dict)  # colour -> Clock (absent: initial_clock(settings))
    costs: dict = field(default_factory=dict)  # k -> seconds of the last call with k symmetries

    def set(self, settings: TimeSettings) -> None:
        """New time settings: both clocks start again."""
        self.settings = settings
        self.clocks = {}

    def reset_clocks(self) -> None:
        """A new game with the same settings."""
        self.clocks = {}

    def clock(self, colour: int) -> Clock | None:
        if self.settings.unlimited:
            return None
        if colour not in self.clocks:
            self.clocks[colour] = initial_clock(self.settings)
        return self.clocks[colour]

    def time_left(self, colour: int, seconds: float, stones: int) -> None:
        self.clocks[colour] = Clock(seconds, stones)

    def budget(self, colour: int, *, board_size: int, moves_played: int) -> float | None:
        return move_budget(self.settings, self.clock(colour), board_size=board_size, moves_played=moves_played)

    def symmetries(self, colour: int, *, board_size: int, moves_played: int) -> int:
        budget = self.budget(colour, board_size=board_size, moves_played=moves_played)
        return choose_symmetries(budget, self.costs, unlimited=self.unlimited)

    def measured(self, k: int, seconds: float) -> None:
        """A call with ``k`` symmetries took ``seconds``: the cost the next decisions use."""
        self.costs[k] = seconds

    def spent(self, colour: int, seconds: float) -> None:
        """``colour``'s move took ``seconds`` of its clock (replaced by the next ``time_left``)."""
        c = self.clock(colour)
        if c is not None:
            self.clocks[colour] = after_move(self.settings, c, seconds)

