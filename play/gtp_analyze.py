"""The analysis handler group: ``lz-analyze``, ``kata-analyze`` and their ``genmove_analyze`` forms answer an
:class:`Analysis`, which :class:`kifunet.play.gtp_engine.Engine` writes (streaming in ``serve``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kifunet.data_prep.rules.board import Board
from kifunet.eval.legality import top_moves

from . import gtp_analysis
from .gtp_protocol import GtpError, command
from .move_choice import own_eyes


@dataclass
class Analysis:
    """What an analysis command answers: the run, and for genmove_analyze its first block and the chosen move
    (a synchronous response)."""

    run: gtp_analysis.AnalysisRun
    first_block: str = ""
    play: str | None = None  # genmove_analyze: the vertex, "pass" or "resign"


@dataclass
class _PvLine:
    """A PV being built: the position after it, and the net's output there once computed."""

    board: Board
    moves: list  # [(colour, flat)] the game so far plus the PV
    setup: list
    colour: int  # to move next
    probs: np.ndarray | None = None

    def play(self, flat: int, nn: int) -> None:
        if flat != nn:
            self.board.play(flat, self.colour)
        self.moves.append((self.colour, flat))
        self.colour = 3 - self.colour
        self.probs = None


class AnalysisCommands:
    """The analysis handler group over ``engine`` (its ``game``, ``policy``, ``moves``, ``log``,
    ``analysis_pv``)."""

    def __init__(self, engine):
        self.engine = engine
        self._said_no_value = False

    @command("lz-analyze")
    def lz_analyze(self, a):
        return self._analyze(gtp_analysis.LZ, a)

    @command("kata-analyze")
    def kata_analyze(self, a):
        return self._analyze(gtp_analysis.KATA, a)

    @command("lz-genmove_analyze")
    def lz_genmove_analyze(self, a):
        return self._genmove_analyze(gtp_analysis.LZ, a)

    @command("kata-genmove_analyze")
    def kata_genmove_analyze(self, a):
        return self._genmove_analyze(gtp_analysis.KATA, a)

    def _analyze(self, fmt: str, a) -> Analysis:
        req = self._request(fmt, a)
        return Analysis(self._run(req, req.colour or self.engine.game.state.next_colour()))

    def _genmove_analyze(self, fmt: str, a) -> Analysis:
        req = self._request(fmt, a)
        colour = req.colour or self.engine.game.state.next_colour()
        run = self._run(req, colour)
        first = run.block()
        return Analysis(run, first, self.engine.moves.choose_and_play(colour, play=True))

    def _request(self, fmt: str, a) -> gtp_analysis.AnalyzeRequest:
        try:
            return gtp_analysis.parse_request(fmt, a, self.engine.game.size)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None

    def _run(self, req: gtp_analysis.AnalyzeRequest, colour: int) -> gtp_analysis.AnalysisRun:
        e, s = self.engine, self.engine.game.state
        n = e.game.size
        nn = n * n
        probs, value = gtp_analysis.evaluate(e.policy, s.moves, colour, s.setup)
        has_value = value is not None
        if not has_value and not self._said_no_value:
            e.log(f"analysis: {gtp_analysis.NO_VALUE_NOTE}")
            self._said_no_value = True
        allowed = self._candidates(s.board, colour) & ~req.banned(colour, 1, n)
        candidates = []
        for m in top_moves(probs, allowed, req.count()):
            line = _PvLine(s.board.copy(), list(s.moves), list(s.setup), colour)
            line.play(m, nn)
            winrate = 0.5
            if has_value:  # the value of the position after the move, for the opponent
                line.probs, v = gtp_analysis.evaluate(e.policy, line.moves, line.colour, line.setup)
                winrate = gtp_analysis.winrate_after(v)
            candidates.append(gtp_analysis.Candidate(m, float(probs[m]), winrate, [m], state=line, done=m == nn))
        return gtp_analysis.AnalysisRun(req, n, candidates, lambda c: self._extend_pv(c, req), e.analysis_pv)

    def _candidates(self, board: Board, colour: int) -> np.ndarray:
        """bool [N*N + 1]: genmove's candidates: legal points that do not fill ``colour``'s own eye, and pass
        when the net has a pass output."""
        nn = self.engine.game.size ** 2
        ok = board.legal_moves(colour)
        ok[:nn] &= ~own_eyes(board, colour)
        ok[nn] = bool(self.engine.policy.has_pass)
        return ok

    def _extend_pv(self, c: gtp_analysis.Candidate, req: gtp_analysis.AnalyzeRequest) -> None:
        """Append the net's reply to ``c.pv``: the most probable of genmove's candidates (pass included)."""
        line, n = c.state, self.engine.game.size
        probs = line.probs
        if probs is None:
            probs = gtp_analysis.evaluate(self.engine.policy, line.moves, line.colour, line.setup)[0]
        ok = self._candidates(line.board, line.colour) & ~req.banned(line.colour, len(c.pv) + 1, n)
        best = top_moves(probs, ok, 1)
        if not best:
            c.done = True
            return
        line.play(best[0], n * n)
        c.pv.append(best[0])
        c.done = best[0] == n * n
