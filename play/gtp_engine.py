"""A GTP version 2 engine that plays a policy net's raw moves (no search).

``kifunet gtp --checkpoint RUN`` (or ``--model NAME`` for a randomly initialised net, ``--model net.onnx`` for an
exported one: :mod:`kifunet.play.onnx_policy`) speaks GTP on
stdin/stdout, for GoGui, Sabaki, ``gogui-twogtp`` or ``kifunet match``.

Commands: ``protocol_version name version known_command list_commands quit boardsize clear_board komi play
genmove undo showboard final_score`` and ``reg_genmove`` (choose without playing), ``kgs-genmove_cleanup``
(genmove without the pass-after-pass rule), ``fixed_handicap`` / ``place_free_handicap`` /
``set_free_handicap``, ``time_settings`` / ``time_left`` / ``kgs-time_settings`` (accepted and ignored: the
net answers in milliseconds), ``set_random_seed N`` (the sampling seed; ``kifunet match`` sends one per game),
``kifunet-policy COLOUR [K]`` (the K most probable legal moves with their probabilities), and the analysis
commands of Sabaki and Lizzie, ``lz-analyze``, ``kata-analyze``, ``lz-genmove_analyze``, ``kata-genmove_analyze``
(formats, arguments and what "visits" and "winrate" mean without a search: :mod:`kifunet.play.gtp_analysis`).
Errors follow the spec: ``? unknown command``, ``? illegal move``, ``? unacceptable size``, ``? syntax error``
(also for ``undo`` with arguments and a ``komi`` that is not one finite number), ``? cannot undo``, and
``? komi ... is out of range`` for ``|komi| > N*N`` (:func:`kifunet.play.scoring.komi_problem`). Ids are echoed; every response ends with a blank line.

Streaming: :meth:`Engine.serve` reads stdin on a thread into a queue, so an analysis can wait for the next
line with a timeout (a block every interval) on every platform; ``select()`` on stdin would not see lines
already in Python's read buffer and does not work on Windows pipes. :meth:`Engine.handle` stays synchronous:
outside ``serve`` an analysis command answers ``analysis_blocks`` blocks (default 1) and ends its response.

Rules: simple ko, suicide illegal (:class:`kifunet.data_prep.board.Board`), area scoring.

How a move is chosen, when the engine passes and when it resigns: :mod:`kifunet.play.move_choice`.

``final_score`` is that area score (no dead-stone removal): ``B+3.5``, ``W+0.5`` or ``0``.
"""

from __future__ import annotations

import math
import queue
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, TextIO

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.board import Board
from kifunet.data_prep.game import BLACK, EMPTY, WHITE

from . import gtp_analysis, scoring
from .move_choice import PlaySettings, choose_move, own_eyes

PROTOCOL_VERSION = "2"

# Which of the spec's nine points (see Engine._handicap_points) each fixed handicap uses (GTP spec 4.1.1).
_HANDICAP_ORDER = {2: (0, 1), 3: (0, 1, 2), 4: (0, 1, 2, 3), 5: (0, 1, 2, 3, 4), 6: (0, 1, 2, 3, 5, 6),
                   7: (0, 1, 2, 3, 4, 5, 6), 8: (0, 1, 2, 3, 5, 6, 7, 8), 9: tuple(range(9))}


class GtpError(Exception):
    """A command failed: the message is the GTP error text (``? message``)."""


def parse_colour(s: str) -> int:
    c = gtp_analysis.colour_word(s)
    if c is None:
        raise GtpError("syntax error")
    return c


def colour_letter(c: int) -> str:
    return "B" if c == BLACK else "W"


@dataclass
class _State:
    board: Board
    moves: list = field(default_factory=list)  # [(colour, flat)]
    setup: list = field(default_factory=list)  # [(colour, flat)] handicap stones


@dataclass
class _Analysis:
    """What an analysis command hands :meth:`Engine.handle`: the run, and for genmove_analyze its first block and
    the chosen move (a synchronous response)."""

    run: gtp_analysis.AnalysisRun
    first_block: str = ""
    play: str | None = None  # genmove_analyze: the vertex, "pass" or "resign"


class Engine:
    """GTP engine state and command handlers; :meth:`handle` answers one line, :meth:`serve` runs a session.

    ``analysis_blocks``: the blocks an analysis command answers in :meth:`handle` (outside :meth:`serve`);
    ``analysis_pv``: the longest PV an analysis shows (see :mod:`kifunet.play.gtp_analysis`).
    """

    def __init__(self, policy, *, settings: PlaySettings | None = None, komi: float = 7.5, name: str = "kifunet",
                 version: str = "", log: TextIO | None = None, analysis_blocks: int = 1,
                 analysis_pv: int = gtp_analysis.DEFAULT_PV_LENGTH):
        self.policy = policy
        self.settings = settings or PlaySettings()
        self.size = policy.board_size
        self.komi = float(komi)
        self.name = name
        self.version = version or _default_version(policy)
        self.rng = np.random.default_rng(self.settings.seed)
        self.log = log
        self.state = _State(Board(self.size))
        self.history: list[_State] = []
        self.quit = False
        self.analysis_blocks = analysis_blocks
        self.analysis_pv = analysis_pv
        self._streaming = False  # inside serve(): an analysis command leaves its run in self._analysis
        self._analysis: gtp_analysis.AnalysisRun | None = None
        self._said_no_value = False
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: PROTOCOL_VERSION,
            "name": lambda a: self.name,
            "version": lambda a: self.version,
            "known_command": self._known_command,
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": self._quit,
            "boardsize": self._boardsize,
            "clear_board": self._clear_board,
            "komi": self._komi,
            "play": self._play,
            "genmove": lambda a: self._genmove(a, play=True),
            "reg_genmove": lambda a: self._genmove(a, play=False),
            "kgs-genmove_cleanup": lambda a: self._genmove(a, play=True, cleanup=True),
            "undo": self._undo,
            "showboard": self._showboard,
            "final_score": self._final_score,
            "fixed_handicap": self._fixed_handicap,
            "place_free_handicap": self._fixed_handicap,
            "set_free_handicap": self._set_free_handicap,
            "time_settings": lambda a: "",
            "time_left": lambda a: "",
            "kgs-time_settings": lambda a: "",
            "set_random_seed": self._set_random_seed,
            "kifunet-policy": self._policy_command,
            "lz-analyze": lambda a: self._analyze(gtp_analysis.LZ, a),
            "kata-analyze": lambda a: self._analyze(gtp_analysis.KATA, a),
            "lz-genmove_analyze": lambda a: self._genmove_analyze(gtp_analysis.LZ, a),
            "kata-genmove_analyze": lambda a: self._genmove_analyze(gtp_analysis.KATA, a),
        }

    # --- protocol ----------------------------------------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """One input line -> the full response text (``=id ...\\n\\n``), or None for an empty/comment line."""
        line = "".join(ch for ch in line if ch in "\t\n" or 32 <= ord(ch) != 127)
        line = line.split("#", 1)[0].replace("\t", " ").strip()
        if not line:
            return None
        parts = line.split()
        cid = ""
        if parts[0].isdigit():
            cid = parts.pop(0)
            if not parts:
                return f"?{cid} syntax error\n\n"
        cmd, args = parts[0], parts[1:]
        handler = self.commands.get(cmd)
        if handler is None:
            return f"?{cid} unknown command\n\n"
        try:
            out = handler(args)
        except GtpError as e:
            return f"?{cid} {e}\n\n"
        except Exception as e:  # keep the session alive; say what broke
            self._log(f"internal error in {cmd}: {type(e).__name__}: {e}")
            return f"?{cid} internal error: {type(e).__name__}: {e}\n\n"
        if isinstance(out, _Analysis):
            return self._analysis_response(cid, out)
        return f"={cid} {out}\n\n" if out else f"={cid}\n\n"

    def _analysis_response(self, cid: str, a: _Analysis) -> str:
        head = f"={cid}\n"
        if a.play is not None:  # genmove_analyze: synchronous
            return f"{head}{a.first_block}play {a.play}\n\n"
        if self._streaming:  # serve() writes the next blocks and the final blank line
            self._analysis = a.run
            return head + a.run.block()
        return head + "".join(a.run.block() for _ in range(self.analysis_blocks)) + "\n"

    def serve(self, stdin: TextIO, stdout: TextIO) -> int:
        """Answer stdin's lines on stdout until ``quit`` or end of input, streaming analyses (module docstring)."""
        lines: queue.Queue = queue.Queue()

        def read() -> None:
            try:
                for line in stdin:
                    lines.put(line)
            finally:
                lines.put(None)  # end of input

        threading.Thread(target=read, name="gtp-stdin", daemon=True).start()
        self._streaming = True
        try:
            line = lines.get()
            while line is not None:
                resp = self.handle(line)
                if resp is not None:
                    stdout.write(resp)
                    stdout.flush()
                if self.quit:
                    break
                line = self._stream(lines, stdout) if self._analysis is not None else lines.get()
        finally:
            self._streaming = False
            self._analysis = None
        return 0

    def _stream(self, lines: queue.Queue, stdout: TextIO):
        """Write a block every interval until an input line arrives; end the response; return that line."""
        run, self._analysis = self._analysis, None
        interval = run.interval_s  # None: wait without repeating
        while True:
            try:
                line = lines.get(timeout=interval)
            except queue.Empty:
                try:
                    block = run.block()
                except Exception as e:  # keep the session alive: stop repeating, wait for the next line
                    self._log(f"internal error in analysis: {type(e).__name__}: {e}")
                    interval = None
                    continue
                if block:
                    stdout.write(block)
                    stdout.flush()
                continue
            stdout.write("\n")
            stdout.flush()
            return line

    def _log(self, msg: str) -> None:
        if self.log is not None:
            print(msg, file=self.log, flush=True)

    # --- commands ----------------------------------------------------------------------------------------
    def _known_command(self, a):
        if len(a) != 1:
            raise GtpError("syntax error")
        return "true" if a[0] in self.commands else "false"

    def _quit(self, a):
        self.quit = True
        return ""

    def _boardsize(self, a):
        if len(a) != 1 or not a[0].isdigit():
            raise GtpError("syntax error")
        if int(a[0]) != self.size:
            raise GtpError("unacceptable size")
        self._clear_board([])
        return ""

    def _clear_board(self, a):
        self.state = _State(Board(self.size))
        self.history = []
        return ""

    def _komi(self, a):
        """``komi K``: one finite number with ``|K| <= N*N`` (no score on an N x N board can exceed that)."""
        if len(a) != 1:
            raise GtpError("syntax error")
        try:
            komi = float(a[0])
        except ValueError:
            raise GtpError("syntax error") from None
        problem = scoring.komi_problem(komi, self.size)
        if problem:
            raise GtpError(("syntax error: " if not math.isfinite(komi) else "") + problem)
        self.komi = komi
        return ""

    def _vertex(self, s: str) -> int:
        try:
            return coords.to_flat(coords.from_gtp(s, self.size), self.size)
        except ValueError:
            raise GtpError("syntax error") from None

    def _push(self) -> None:
        s = self.state
        self.history.append(_State(s.board.copy(), list(s.moves), list(s.setup)))

    def _apply(self, colour: int, flat: int) -> None:
        self._push()
        if flat != self.size * self.size:
            self.state.board.play(flat, colour)
        self.state.moves.append((colour, flat))

    def _play(self, a):
        if len(a) != 2:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        if a[1].lower() == "resign":
            return ""
        flat = self._vertex(a[1])
        if not self.state.board.is_legal(flat, colour):
            raise GtpError("illegal move")
        self._apply(colour, flat)
        return ""

    def _genmove(self, a, *, play: bool, cleanup: bool = False):
        if len(a) != 1:
            raise GtpError("syntax error")
        return self._choose_and_play(parse_colour(a[0]), play=play, cleanup=cleanup)

    def _choose_and_play(self, colour: int, *, play: bool, cleanup: bool = False) -> str:
        s = self.state
        probs = self.policy.probabilities(s.moves, colour, s.setup)
        opponent_passed = bool(s.moves) and s.moves[-1] == (3 - colour, self.size * self.size)
        choice = choose_move(probs, s.board, colour, moves_played=len(s.moves), opponent_passed=opponent_passed,
                             komi=self.komi, settings=self.settings, rng=self.rng,
                             has_pass=bool(self.policy.has_pass), cleanup=cleanup)
        if choice.move == "resign":
            self._log(f"move {len(s.moves) + 1} {colour_letter(colour)}: resign")
            return "resign"
        vertex = coords.to_gtp(coords.from_flat(choice.move, self.size), self.size)
        self._log(f"move {len(s.moves) + 1} {colour_letter(colour)}: {vertex} ({choice.reason}, "
                  f"p={choice.probability:.3f})")
        if play:
            self._apply(colour, choice.move)
        return vertex

    def _undo(self, a):
        if a:
            raise GtpError("syntax error")
        if not self.history or not self.state.moves:
            raise GtpError("cannot undo")
        self.state = self.history.pop()
        return ""

    def _showboard(self, a):
        n = self.size
        cols = coords.GTP_COLUMNS[:n]
        chars = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        st = self.state.board.stones
        last = self.state.moves[-1][1] if self.state.moves else None
        lines = ["   " + " ".join(cols)]
        for r in range(n):
            row = []
            for c in range(n):
                ch = chars[int(st[r, c])]
                row.append(ch)
            mark = ""
            if last is not None and last != n * n and last // n == r:
                mark = f"   last move {coords.to_gtp(coords.from_flat(last, n), n)}"
            lines.append(f"{n - r:2d} " + " ".join(row) + f" {n - r:2d}" + mark)
        lines.append("   " + " ".join(cols))
        b = self.state.board
        lines.append(f"captured: black {b.captures(BLACK)} white {b.captures(WHITE)}; moves {len(self.state.moves)};"
                     f" komi {self.komi:g}")
        return "\n" + "\n".join(lines)

    def _final_score(self, a):
        return scoring.format_score(scoring.area_score(self.state.board.stones, self.komi))

    def _handicap_points(self, k: int) -> list[int]:
        """The GTP spec's fixed placement (section 4.1.1): 3-3 points below 13x13, 4-4 points from 13x13."""
        n = self.size
        if n < 7 or not 2 <= k <= (9 if n % 2 == 1 and n >= 9 else 4):
            raise GtpError("invalid number of stones")
        edge = 3 if n >= 13 else 2
        lo, mid, hi = edge, n // 2, n - 1 - edge
        # (row from the top, col) of D4 Q16 D16 Q4 K10 D10 Q10 K4 K16 on 19x19, in that order
        spec = [(hi, lo), (lo, hi), (lo, lo), (hi, hi), (mid, mid), (mid, lo), (mid, hi), (hi, mid), (lo, mid)]
        return [r * n + c for r, c in (spec[i] for i in _HANDICAP_ORDER[k])]

    def _fixed_handicap(self, a):
        if len(a) != 1 or not a[0].isdigit():
            raise GtpError("syntax error")
        if self.state.moves or self.state.setup or self.state.board.stones.any():
            raise GtpError("board not empty")
        pts = self._handicap_points(int(a[0]))
        self.state.board.setup(pts, BLACK)
        self.state.setup = [(BLACK, p) for p in pts]
        return " ".join(coords.to_gtp(coords.from_flat(p, self.size), self.size) for p in pts)

    def _set_free_handicap(self, a):
        if len(a) < 2:
            raise GtpError("syntax error")
        if self.state.moves or self.state.setup or self.state.board.stones.any():
            raise GtpError("board not empty")
        pts = [self._vertex(v) for v in a]
        if len(set(pts)) != len(pts) or self.size * self.size in pts:
            raise GtpError("bad vertex list")
        self.state.board.setup(pts, BLACK)
        self.state.setup = [(BLACK, p) for p in pts]
        return ""

    def _set_random_seed(self, a):
        if len(a) != 1 or not a[0].lstrip("-").isdigit():
            raise GtpError("syntax error")
        self.rng = np.random.default_rng(abs(int(a[0])))
        return ""

    def _policy_command(self, a):
        if not 1 <= len(a) <= 2:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        k = int(a[1]) if len(a) == 2 and a[1].isdigit() else 10
        s = self.state
        probs = self.policy.probabilities(s.moves, colour, s.setup)
        legal = s.board.legal_moves(colour)
        idx = [int(i) for i in np.argsort(-probs, kind="stable") if legal[i]][:k]
        return " ".join(f"{coords.to_gtp(coords.from_flat(i, self.size), self.size)} {probs[i]:.4f}" for i in idx)

    # --- analysis (arguments, formats and rules: kifunet.play.gtp_analysis) -------------------------------------
    def _next_colour(self) -> int:
        """The side to move: the other colour after the last move; White first after handicap stones."""
        s = self.state
        if s.moves:
            return 3 - s.moves[-1][0]
        return WHITE if s.setup else BLACK

    def _request(self, fmt: str, a) -> gtp_analysis.AnalyzeRequest:
        try:
            return gtp_analysis.parse_request(fmt, a, self.size)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None

    def _analysis_run(self, req: gtp_analysis.AnalyzeRequest, colour: int) -> gtp_analysis.AnalysisRun:
        s = self.state
        n, nn = self.size, self.size * self.size
        probs, value = gtp_analysis.evaluate(self.policy, s.moves, colour, s.setup)
        has_value = value is not None
        if not has_value and not self._said_no_value:
            self._log(f"analysis: {gtp_analysis.NO_VALUE_NOTE}")
            self._said_no_value = True
        allowed = self._move_candidates(s.board, colour) & ~req.banned(colour, 1, n)
        candidates = []
        for m in gtp_analysis.top_moves(probs, allowed, req.count()):
            line = _PvLine(s.board.copy(), list(s.moves), list(s.setup), colour)
            line.play(m, nn)
            winrate = 0.5
            if has_value:  # the value of the position after the move, for the opponent
                line.probs, v = gtp_analysis.evaluate(self.policy, line.moves, line.colour, line.setup)
                winrate = gtp_analysis.winrate_after(v)
            candidates.append(gtp_analysis.Candidate(m, float(probs[m]), winrate, [m], state=line, done=m == nn))
        return gtp_analysis.AnalysisRun(req, n, candidates, lambda c: self._extend_pv(c, req), self.analysis_pv)

    def _move_candidates(self, board: Board, colour: int) -> np.ndarray:
        """bool [N*N + 1]: genmove's candidates (rule 1): legal points that do not fill ``colour``'s own eye, and
        pass when the net has a pass output."""
        nn = self.size * self.size
        ok = board.legal_moves(colour)
        ok[:nn] &= ~own_eyes(board, colour)
        ok[nn] = bool(self.policy.has_pass)
        return ok

    def _extend_pv(self, c: gtp_analysis.Candidate, req: gtp_analysis.AnalyzeRequest) -> None:
        """Append the net's reply to ``c.pv``: the most probable of genmove's candidates (pass included)."""
        line, n, nn = c.state, self.size, self.size * self.size
        probs = line.probs
        if probs is None:
            probs = gtp_analysis.evaluate(self.policy, line.moves, line.colour, line.setup)[0]
        ok = self._move_candidates(line.board, line.colour) & ~req.banned(line.colour, len(c.pv) + 1, n)
        best = gtp_analysis.top_moves(probs, ok, 1)
        if not best:
            c.done = True
            return
        line.play(best[0], nn)
        c.pv.append(best[0])
        c.done = best[0] == nn

    def _analyze(self, fmt: str, a):
        req = self._request(fmt, a)
        return _Analysis(self._analysis_run(req, req.colour or self._next_colour()))

    def _genmove_analyze(self, fmt: str, a):
        req = self._request(fmt, a)
        colour = req.colour or self._next_colour()
        run = self._analysis_run(req, colour)
        first = run.block()
        return _Analysis(run, first, self._choose_and_play(colour, play=True))


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


def _default_version(policy) -> str:
    """``0.1.0 (DESCRIPTION; value head)`` or ``...; no value head: analysis winrate 0.5 is not an estimate)``:
    the first word stays the package version (Lizzie reads ``version``'s first word as ``MAJOR.MINOR``)."""
    from importlib import metadata

    try:
        v = metadata.version("kifunet")
    except metadata.PackageNotFoundError:
        v = "dev"
    value = "value head" if getattr(policy, "has_value", False) else gtp_analysis.NO_VALUE_NOTE
    return f"{v} ({policy.description}; {value})"


def serve(engine: Engine, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    return engine.serve(stdin or sys.stdin, stdout or sys.stdout)
