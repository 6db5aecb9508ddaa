"""GoGui's analyze commands: the list ``gogui-analyze_commands`` answers (:data:`ANALYZE_COMMANDS`) and the
responses GoGui draws (:class:`GoGuiCommands`); the table of commands and formats: docs/playing.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.game import BLACK, EMPTY
from kifunet.eval.legality import top_moves
from kifunet.data_prep.rules import scoring

from . import gtp_analysis, gtp_args, head_view
from .gtp_protocol import MAX_COUNT, GtpError, command, parse_colour

#: GoGui's analyze-command types (its manual's list)
TYPES = ("bwboard", "cboard", "dboard", "eplist", "gfx", "hstring", "hpstring", "none", "param", "plist", "pspairs",
         "pstring", "sboard", "string", "var", "varb", "varc", "varp", "varpo", "varw")
#: the moves ``policy_gfx`` labels with their percentage
LABELLED_MOVES = 10
#: points whose heat is below this (of the best move's) are left out of ``INFLUENCE`` (GoGui draws nothing)
MIN_INFLUENCE = 0.005


@dataclass(frozen=True)
class AnalyzeCommand:
    """One line of ``gogui-analyze_commands``; ``offered(engine)`` says whether this engine lists it."""

    type: str
    label: str
    command: str
    offered: Callable[[object], bool] = lambda engine: True

    def line(self) -> str:
        if self.type not in TYPES:
            raise ValueError(f"{self.type!r} is not a GoGui analyze type")
        if "/" in self.label or "/" in self.command or "\n" in self.label + self.command:
            raise ValueError(f"an analyze label or command may not hold '/' or a newline: {self.label!r}")
        return f"{self.type}/{self.label}/{self.command}"


def has_value_head(engine) -> bool:
    return bool(engine.policy.has_value)


def reads_profile(engine) -> bool:
    return bool(engine.policy.reads_profile)


def has_ownership_head(engine) -> bool:
    return bool(engine.policy.has_ownership)


def has_score_head(engine) -> bool:
    return bool(engine.policy.has_score)


#: what ``gogui-analyze_commands`` lists (in this order), when ``offered``
ANALYZE_COMMANDS: list[AnalyzeCommand] = [
    AnalyzeCommand("gfx", "Policy heat map", "kifunet-policy_gfx %m"),
    AnalyzeCommand("dboard", "Policy board", "kifunet-policy_dboard %m"),
    AnalyzeCommand("pspairs", "Policy top 10", f"kifunet-policy_percent %m {LABELLED_MOVES}"),
    AnalyzeCommand("string", "Value (net)", "kifunet-value %m", has_value_head),
    AnalyzeCommand("gfx", "Ownership (net)", "kifunet-ownership_gfx %m", has_ownership_head),
    AnalyzeCommand("string", "Score (net)", "kifunet-score %m", has_score_head),
    AnalyzeCommand("string", "Profile", "kifunet-profile", reads_profile),
    AnalyzeCommand("gfx", "Dead stones", "kifunet-dead_gfx"),
]


def analyze_commands(engine, table: list[AnalyzeCommand] | None = None) -> str:
    """The response of ``gogui-analyze_commands``: one ``type/label/command`` line per offered entry."""
    rows = [c for c in (ANALYZE_COMMANDS if table is None else table) if c.offered(engine)]
    labels = [c.label for c in rows]
    if len(set(labels)) != len(labels):
        raise ValueError(f"analyze labels must be unique: {labels}")
    return "\n".join(c.line() for c in rows)


def heat(probs: np.ndarray, legal: np.ndarray, colour: int) -> np.ndarray:
    """float [N*N]: each legal point's probability over the most probable legal point's, signed for GoGui
    (positive: Black to move); 0 on illegal points."""
    nn = legal.shape[0] - 1
    p = np.where(legal[:nn], probs[:nn], 0.0)
    top = float(p.max()) if nn else 0.0
    h = p / top if top > 0 else p
    return h if colour == BLACK else -h


def percent_label(p: float) -> str:
    """A label GoGui fits on a point (at most 3 characters): ``23``, ``9.5``, ``0.4``."""
    v = 100.0 * p
    return f"{v:.0f}" if v >= 9.95 else f"{v:.1f}"


def _vertex(flat: int, n: int) -> str:
    return coords.to_gtp(coords.from_flat(flat, n), n)


def policy_gfx(probs: np.ndarray, legal: np.ndarray, n: int, colour: int, *, has_pass: bool = False) -> str:
    """The ``gfx`` response for the policy ``probs`` [N*N+1] of ``colour`` to move: ``INFLUENCE`` (:func:`heat`),
    ``LABEL`` (the 10 most probable moves in percent), ``TEXT`` (the best move)."""
    h = heat(probs, legal, colour)
    nn = n * n
    pts = [i for i in range(nn) if abs(h[i]) >= MIN_INFLUENCE]
    lines = []
    if pts:
        lines.append("INFLUENCE " + " ".join(f"{_vertex(i, n)} {h[i]:.3f}" for i in pts))
    order = top_moves(probs[:nn], legal[:nn], LABELLED_MOVES)
    order = [i for i in order if probs[i] >= 0.0005]  # a label reading "0.0" says nothing
    if order:
        lines.append("LABEL " + " ".join(f"{_vertex(i, n)} {percent_label(float(probs[i]))}" for i in order))
    side = "black" if colour == BLACK else "white"
    text = f"TEXT {side} to play: " + (f"best {_vertex(order[0], n)} {100 * probs[order[0]]:.1f}%"
                                       if order else "no legal move on the board")
    if has_pass:
        text += f", pass {100 * probs[nn]:.1f}%"
    lines.append(text)
    return "\n".join(lines)


def policy_pspairs(probs: np.ndarray, legal: np.ndarray, n: int, k: int = LABELLED_MOVES) -> str:
    """The ``pspairs`` response: the ``k`` most probable legal points (pass has no point to label) with their
    percentage as :func:`percent_label` writes it, most probable first."""
    nn = n * n
    order = top_moves(probs[:nn], legal[:nn], k)
    return " ".join(f"{_vertex(i, n)} {percent_label(float(probs[i]))}" for i in order)


def policy_dboard(probs: np.ndarray, legal: np.ndarray, n: int, colour: int) -> str:
    """The ``dboard`` response: N rows of N numbers in [-1, 1], the top row first (``heat``)."""
    h = heat(probs, legal, colour).reshape(n, n)
    return "\n".join(" ".join(f"{v:.3f}" for v in row) for row in h)


def value_line(value: float, colour: int) -> str:
    """The ``string`` response of ``kifunet-value``: the value head's expected result for ``colour`` (to
    move), in [-1, 1], and the same as a win probability ((v + 1) / 2)."""
    side = "black" if colour == BLACK else "white"
    return f"{side} to play: value {value:+.3f} (expected result in [-1, 1]), {50 * (value + 1):.1f}% to win"


def ownership_gfx(ownership: np.ndarray, n: int, colour: int, score: float | None = None) -> str:
    """The ``gfx`` response of ``kifunet-ownership_gfx`` for the heads' outputs with ``colour`` to move (ownership
    ``[N, N]`` and score from ``colour``'s view, the heads' contract): ``INFLUENCE`` each point's expected owner
    from Black's view, as GoGui draws it (+1 a full black square, -1 a full white one; points below
    :data:`MIN_INFLUENCE` in size left out), ``TEXT`` the points each side owns and the score head's margin."""
    own = head_view.black_view(ownership, colour).reshape(-1)
    pts = [i for i in range(n * n) if abs(own[i]) >= MIN_INFLUENCE]
    lines = ["INFLUENCE " + " ".join(f"{_vertex(i, n)} {own[i]:.3f}" for i in pts)] if pts else []
    black, white = head_view.owned_points(own)
    text = (f"TEXT {'black' if colour == BLACK else 'white'} to play: ownership (net) Black {black:.1f} points, "
            f"White {white:.1f}")
    if score is not None:
        text += f"; score (net) {head_view.margin_text(head_view.black_view(score, colour))}"
    lines.append(text)
    return "\n".join(lines)


def score_line(score: float, colour: int) -> str:
    """The ``string`` response of ``kifunet-score``: the score head's final margin, as a result (Black's view) and
    in points for ``colour`` (to move)."""
    side = "black" if colour == BLACK else "white"
    return (f"{side} to play: score (net) {head_view.margin_text(head_view.black_view(score, colour))} "
            f"({score:+.1f} points for {side}, komi as in the net's training games)")


class GoGuiCommands:
    """The GoGui handler group over ``engine`` (its ``game`` and ``policy``)."""

    def __init__(self, engine):
        self.engine = engine

    @command("gogui-analyze_commands")
    def analyze_commands(self, a):
        return analyze_commands(self.engine)

    def _probs(self, colour: int) -> tuple[np.ndarray, np.ndarray]:
        s = self.engine.game.state
        return self.engine.policy.probabilities(s.moves, colour, s.setup), s.board.legal_moves(colour)

    @command("kifunet-policy_gfx")
    def policy_gfx(self, a):
        colour = self._one_colour(a)
        probs, legal = self._probs(colour)
        return policy_gfx(probs, legal, self.engine.game.size, colour, has_pass=bool(self.engine.policy.has_pass))

    @command("kifunet-policy_dboard")
    def policy_dboard(self, a):
        colour = self._one_colour(a)
        probs, legal = self._probs(colour)
        return "\n" + policy_dboard(probs, legal, self.engine.game.size, colour)

    @command("kifunet-policy_percent")
    def policy_percent(self, a):
        """``kifunet-policy_percent COLOUR [K]``: the K most probable legal points in percent."""
        if not 1 <= len(a) <= 2 or (len(a) == 2 and not gtp_args.is_digits(a[1])):
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        k = LABELLED_MOVES if len(a) == 1 else gtp_args.bounded_int(a[1], MAX_COUNT)
        probs, legal = self._probs(colour)
        return policy_pspairs(probs, legal, self.engine.game.size, MAX_COUNT if k is None else k)

    @command("kifunet-value")
    def value(self, a):
        colour = self._one_colour(a)
        s = self.engine.game.state
        _, value = gtp_analysis.evaluate(self.engine.policy, s.moves, colour, s.setup)
        if value is None:
            raise GtpError("the net has no value head")
        return value_line(value, colour)

    def _heads(self, a, head: str):
        """``(colour, Outputs)`` of the single pass for ``kifunet-ownership_gfx`` / ``kifunet-score``; a net
        without ``head`` is a GTP error."""
        colour = self._one_colour(a)
        pol = self.engine.policy
        if not (pol.has_ownership if head == "ownership" else pol.has_score):
            raise GtpError(f"the net has no {head} head")
        s = self.engine.game.state
        return colour, pol.outputs(s.moves, colour, s.setup)

    @command("kifunet-ownership_gfx")
    def ownership_gfx(self, a):
        """``gfx``: the ownership head (``INFLUENCE``, Black's view) and, with a score head, its margin (``TEXT``)."""
        colour, out = self._heads(a, "ownership")
        return ownership_gfx(out.ownership[0], self.engine.game.size, colour,
                             None if out.score is None else float(out.score[0]))

    @command("kifunet-score")
    def score(self, a):
        colour, out = self._heads(a, "score")
        return score_line(float(out.score[0]), colour)

    @command("kifunet-dead_gfx")
    def dead_gfx(self, a):
        """``gfx``: the estimate's dead stones (``MARK``), seki stones (``TRIANGLE``), the owned empty points
        (``BLACK`` / ``WHITE`` squares: ownership beyond 0.5) and the score (``TEXT``)."""
        if a:
            raise GtpError("syntax error")
        game = self.engine.game
        est = game.estimate()
        empty = game.state.board.stones == EMPTY
        own = est.ownership
        groups = [("MARK", est.dead()), ("TRIANGLE", est.seki()),
                  ("BLACK", empty & (own > 0.5)), ("WHITE", empty & (own < -0.5))]
        lines = [f"{label} " + " ".join(game.gtp(int(p)) for p in np.flatnonzero(m.reshape(-1)))
                 for label, m in groups if m.any()]
        lines.append(f"TEXT dead stones: {int(est.dead().sum())}, seki stones: {int(est.seki().sum())}; "
                     f"score {scoring.format_score(est.score(game.komi))} (komi {game.komi:g})")
        return "\n".join(lines)

    @staticmethod
    def _one_colour(a) -> int:
        if len(a) != 1:
            raise GtpError("syntax error")
        return parse_colour(a[0])
