"""A GTP version 2 engine that plays a policy net's raw moves (no search).

``kifunet gtp --checkpoint RUN`` (or ``--model NAME`` for a randomly initialised net, ``--model net.onnx`` for an
exported one: :mod:`kifunet.play.onnx_policy`) speaks GTP on
stdin/stdout, for GoGui, Sabaki, ``gogui-twogtp`` or ``kifunet match``.

Commands: ``protocol_version name version known_command list_commands quit boardsize clear_board komi play
genmove undo showboard final_score final_status_list`` and ``reg_genmove`` (choose without playing),
``kgs-genmove_cleanup`` (genmove that removes dead stones before it passes), ``fixed_handicap`` / ``place_free_handicap`` /
``set_free_handicap``, ``set_random_seed N`` (the sampling seed; ``kifunet match`` sends one per game),
``kifunet-policy COLOUR [K]`` (the K most probable legal moves with their probabilities; GoGui's list uses
``kifunet-policy_percent COLOUR [K]``, the same points in percent),
``kifunet-profile [key=value,...]`` (the game profile, below), and:

* the analysis commands of Sabaki and Lizzie, ``lz-analyze``, ``kata-analyze``, ``lz-genmove_analyze``,
  ``kata-genmove_analyze`` (formats, arguments and what "visits" and "winrate" mean without a search:
  :mod:`kifunet.play.gtp_analysis`);
* GoGui's ``gogui-analyze_commands`` and the commands it lists, ``kifunet-policy_gfx``,
  ``kifunet-policy_dboard``, ``kifunet-policy_percent``, ``kifunet-value``, ``kifunet-dead_gfx``
  (:mod:`kifunet.play.gtp_gogui`);
* ``loadsgf FILE [MOVE_NUMBER|VERTEX]`` and ``printsgf [FILE]`` (:mod:`kifunet.play.gtp_sgf`);
* ``time_settings``, ``time_left``, ``kgs-time_settings``: a clock and a per-move budget that decide how many
  board symmetries genmove's policy averages (:mod:`kifunet.play.time_manager`; without a time limit,
  ``symmetries`` of the constructor, default 1); ``cputime`` (the engine process's CPU seconds).

``boardsize N`` (GTP's 2..25) is accepted when the net can play N x N (``policy.size_problem(N)`` is None; a
policy without that method plays only its own size) and the rules engine can
(:class:`kifunet.data_prep.rules.board.Board`: up to 19 today), switching to ``policy.resized(N)`` (made once per size);
``version`` then says what size the net was trained on (``trained_size``). The reason for a refusal goes to the log; the answer is the spec's
``? unacceptable size``.

Errors follow the spec: ``? unknown command``, ``? illegal move``, ``? unacceptable size``, ``? syntax error``
(also for ``undo`` with arguments and a ``komi`` that is not one finite number), ``? cannot undo``, and
``? komi ... is out of range`` for ``|komi| > N*N`` (:func:`kifunet.play.scoring.komi_problem`). A number
argument is read only when it is ASCII digits of bounded length (:mod:`kifunet.play.gtp_args`): a token of any
length is answered in one line (``boardsize`` and 50 MB of digits: ``? unacceptable size``). Ids are echoed;
a success is ``=[id]``, a space and the text, with the space even when the text is empty (``'= \\n\\n'``), as GNU Go and
the spec's examples write it (an analysis response's first line is ``=[id]`` alone: the KataGo format); every
response ends with a blank line.

Streaming: :meth:`Engine.serve` reads stdin on a thread into a queue, so an analysis can wait for the next
line with a timeout (a block every interval) on every platform; ``select()`` on stdin would not see lines
already in Python's read buffer and does not work on Windows pipes. :meth:`Engine.handle` stays synchronous:
outside ``serve`` an analysis command answers ``analysis_blocks`` blocks (default 1) and ends its response.

Rules: simple ko, suicide illegal (:class:`kifunet.data_prep.rules.board.Board`), area scoring. The game (board,
setup, moves, undo with O(1) memory per move, a loaded game's players and rules) is a
:class:`kifunet.play.game_state.GameState`.

How a move is chosen, when the engine passes and when it resigns: :mod:`kifunet.play.move_choice`.

The game profile (issue 33; read only by a net with a profile input, ``reads_profile``): the engine keeps the
fields the user set (``kifunet gtp --profile TEXT``, the constructor's ``profile``, or ``kifunet-profile
TEXT``, :func:`kifunet.data_prep.profiles.parse`'s syntax: ``rank=7d,year=2010,source=kgs``). ``kifunet-profile``
alone answers them in that syntax (an empty answer: none set); with text it replaces them all (bad text:
``? profile: ...``, one line, naming the key or value; nothing changes). The net is given those fields, plus
what the game says of the others: ``komi`` (GTP ``komi``, ``loadsgf``) unless the profile sets it, and the
handicap (the number of black stones set before the first move when no white one is, 2..9, as
``fixed_handicap`` / ``set_free_handicap`` / a loaded game's setup put them; else 0) unless the profile sets
it; the policy then fills unknown ranks with ``--rank`` (:mod:`kifunet.play.policy`). A net without a profile
input is played exactly as without a profile (the command is accepted and changes nothing; GoGui's list offers
it only for a net that reads one).

The end of the game (:mod:`kifunet.play.life_death`'s estimate of the position, fixed seed, computed once per
position): ``final_score`` is the area score with the estimate's dead stones removed (Chinese counting, komi
to white: ``B+3.5``, ``W+0.5`` or ``0``); ``final_status_list alive|dead|seki`` lists those stones, one chain a
line; ``kifunet-dead_gfx`` draws them in GoGui; ``kifunet-resign on|off`` switches resigning (on by default,
:class:`kifunet.play.move_choice.PlaySettings`; ``kifunet match`` sends ``off`` unless ``--resign``).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, TextIO

import numpy as np

from kifunet.data_prep import coords, profiles
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, EMPTY, WHITE
from kifunet.eval.legality import top_moves

from . import gtp_analysis, gtp_args, gtp_gogui, gtp_sgf, life_death, scoring, time_manager
from .game_state import GameState, chains_in
from .move_choice import PlaySettings, choose_move, own_eyes

PROTOCOL_VERSION = "2"
#: the control characters :meth:`Engine.handle` drops from a line (GTP spec 2.2: all but HT and LF), as a
#: ``str.translate`` table (one pass in C over a line of any length)
_CONTROL = {c: None for c in (*range(9), *range(11, 32), 127)}
#: the largest number ``boardsize``, ``fixed_handicap`` and ``kifunet-policy`` read (beyond: refused as such)
_MAX_COUNT = 10**6

# Which of the spec's nine points (see Engine._handicap_points) each fixed handicap uses (GTP spec 4.1.1).
_HANDICAP_ORDER = {2: (0, 1), 3: (0, 1, 2), 4: (0, 1, 2, 3), 5: (0, 1, 2, 3, 4), 6: (0, 1, 2, 3, 5, 6),
                   7: (0, 1, 2, 3, 4, 5, 6), 8: (0, 1, 2, 3, 5, 6, 7, 8), 9: tuple(range(9))}


#: ``final_status_list``'s arguments -> the estimate's status (:mod:`kifunet.play.life_death`)
_STATUS = {"alive": life_death.ALIVE, "dead": life_death.DEAD, "seki": life_death.SEKI}


class GtpError(Exception):
    """A command failed: the message is the GTP error text (``? message``)."""


def parse_colour(s: str) -> int:
    c = gtp_analysis.colour_word(s)
    if c is None:
        raise GtpError("syntax error")
    return c


def colour_letter(c: int) -> str:
    return "B" if c == BLACK else "W"


def known_fields(profile: profiles.Profile) -> dict:
    """The fields of ``profile`` that say something (not None; handicap when not 0), as a
    :func:`kifunet.data_prep.profiles.parse_fields` dict."""
    out = {k: v for k, v in dataclasses.asdict(profile).items() if v is not None}
    if not out.get("handicap"):
        out.pop("handicap", None)
    return out


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
    ``analysis_pv``: the longest PV an analysis shows (see :mod:`kifunet.play.gtp_analysis`);
    ``symmetries``: the board symmetries genmove averages without a time limit (1..8; a policy whose
    ``probabilities`` takes no ``symmetries`` always uses 1); ``profile``: the game profile's fields
    (:func:`kifunet.data_prep.profiles.parse`'s text or a :func:`~kifunet.data_prep.profiles.parse_fields`
    dict; module docstring; None: the known fields of the policy's own ``profile``, such as an ONNX file's
    recorded one).
    """

    def __init__(self, policy, *, settings: PlaySettings | None = None, komi: float = 7.5, name: str = "kifunet",
                 version: str = "", log: TextIO | None = None, analysis_blocks: int = 1,
                 analysis_pv: int = gtp_analysis.DEFAULT_PV_LENGTH, symmetries: int = 1, profile=None):
        if not 1 <= symmetries <= time_manager.MAX_SYMMETRIES:
            raise ValueError(f"symmetries must be in 1..{time_manager.MAX_SYMMETRIES}, not {symmetries}")
        if profile is None:
            profile = known_fields(getattr(policy, "profile", None) or profiles.UNKNOWN_PROFILE)
        self.profile_fields = (dict(profile) if isinstance(profile, dict)
                               else profiles.parse_fields(profile))  # ValueError: bad text
        self._profiled: dict = {}  # (id of the sized policy, Profile) -> that policy given the profile
        self.policy = policy
        self._base = policy  # the policy as given: its size, description, and what it resizes from
        self._policies = {policy.board_size: policy}  # size -> the policy playing it (policy.resized(N))
        self.settings = settings or PlaySettings()
        self.size = policy.board_size
        self.komi = float(komi)
        self.name = name
        self._version = version  # "" -> _default_version, computed at the first `version` (it may run the net)
        self._default_version: str | None = None
        self.time = time_manager.TimeManager(unlimited=symmetries)
        self._warm: threading.Thread | None = None  # measuring WARM_SYMMETRIES after time settings
        self._warm_policy = None  # the policy it measures
        self._takes_symmetries = _takes_symmetries(policy)
        self.rng = np.random.default_rng(self.settings.seed)
        self.log = log
        if symmetries > 1 and not self._takes_symmetries:
            self._log(f"the policy cannot average symmetries: genmove uses 1, not {symmetries}")
        self.state = GameState(self.size)
        self.quit = False
        self.analysis_blocks = analysis_blocks
        self.analysis_pv = analysis_pv
        self._streaming = False  # inside serve(): an analysis command leaves its run in self._analysis
        self._analysis: gtp_analysis.AnalysisRun | None = None
        self._said_no_value = False
        self._estimate_cache = None  # (position key, life_death.Estimate)
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
            "final_status_list": self._final_status_list,
            "kifunet-dead_gfx": self._dead_gfx,
            "kifunet-resign": self._resign_switch,
            "fixed_handicap": self._fixed_handicap,
            "place_free_handicap": self._fixed_handicap,
            "set_free_handicap": self._set_free_handicap,
            "time_settings": lambda a: self._time_settings(time_manager.parse_time_settings, a),
            "time_left": self._time_left,
            "kgs-time_settings": lambda a: self._time_settings(time_manager.parse_kgs_time_settings, a),
            "cputime": lambda a: f"{time.process_time():.3f}",
            "loadsgf": self._loadsgf,
            "printsgf": self._printsgf,
            "gogui-analyze_commands": lambda a: gtp_gogui.analyze_commands(self),
            "kifunet-policy_gfx": lambda a: self._gogui_policy(a, dboard=False),
            "kifunet-policy_dboard": lambda a: self._gogui_policy(a, dboard=True),
            "kifunet-value": self._value_command,
            "set_random_seed": self._set_random_seed,
            "kifunet-policy": self._policy_command,
            "kifunet-policy_percent": self._policy_percent,
            "kifunet-profile": self._profile_command,
            "lz-analyze": lambda a: self._analyze(gtp_analysis.LZ, a),
            "kata-analyze": lambda a: self._analyze(gtp_analysis.KATA, a),
            "lz-genmove_analyze": lambda a: self._genmove_analyze(gtp_analysis.LZ, a),
            "kata-genmove_analyze": lambda a: self._genmove_analyze(gtp_analysis.KATA, a),
        }

    # --- protocol ----------------------------------------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """One input line -> the full response text (``=id ...\\n\\n``), or None for an empty/comment line."""
        line = line.translate(_CONTROL)
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
        return f"={cid} {out}\n\n"

    def _analysis_response(self, cid: str, a: _Analysis) -> str:
        head = f"={cid}\n"
        if a.play is not None:  # genmove_analyze: synchronous
            return f"{head}{a.first_block}play {a.play}\n\n"
        if self._streaming:  # serve() writes the next blocks and the final blank line
            self._analysis = a.run
            return head + a.run.block()
        body = "".join(a.run.block() for _ in range(self.analysis_blocks))
        return head + body + "\n" if body else f"={cid} \n\n"  # no info line: an empty response

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

    def measuring(self) -> bool:
        """Whether a background thread is running the net (the symmetry measurement after time settings): a
        process that ends now must leave with ``os._exit``, as a thread still inside XLA aborts at exit."""
        return self._warm is not None and self._warm.is_alive()

    def _log(self, msg: str) -> None:
        if self.log is not None:
            print(msg, file=self.log, flush=True)

    # --- the policy, given the game profile (module docstring) ----------------------------------------------
    @property
    def policy(self):
        """The policy of the current board size, given :meth:`game_profile` when the net reads a profile (one
        copy per size and profile, so it stays the same object while neither changes)."""
        sized = self._sized
        if not getattr(sized, "reads_profile", False):
            return sized
        profile = self.game_profile()
        key = (id(sized), profile)
        got = self._profiled.get(key)
        if got is None:
            got = self._profiled[key] = sized.with_profile(profile)
        return got

    @policy.setter
    def policy(self, pol) -> None:
        self._sized = pol

    def handicap_stones(self) -> int:
        """The handicap the game shows: the black stones set before the first move when no white stone is
        (2..9, more counts as 9), else 0."""
        return self.state.handicap_stones()

    def game_profile(self) -> profiles.Profile:
        """The profile the net is given before the policy's rank rule: the fields set, komi and handicap from
        the game where they set none (module docstring)."""
        fields = dict(self.profile_fields)
        fields.setdefault("komi", float(self.komi))
        fields.setdefault("handicap", self.handicap_stones())
        return profiles.Profile(**fields)

    def _profile_command(self, a):
        """``kifunet-profile``: the profile's fields as set; ``kifunet-profile TEXT``: set them (module docstring)."""
        if not a:
            from kifunet.play.policy import profile_text

            return profile_text(self.profile_fields)
        try:
            fields = profiles.parse_fields(" ".join(a))
        except ValueError as e:
            raise GtpError(str(e).splitlines()[0]) from None
        self.profile_fields = fields
        if not getattr(self._sized, "reads_profile", False):
            self._log("kifunet-profile: this net has no profile input; the profile changes nothing")
        return ""

    @property
    def version(self) -> str:
        """``version``'s answer: the constructor's, else :func:`_default_version` (computed once), and
        ``; trained on NxN`` when the board is not the size the net was trained on."""
        if self._version:
            return self._version
        if self._default_version is None:
            self._default_version = _default_version(self._base)
        trained = _trained_size(self._base)
        if trained == self.size:
            return self._default_version
        return f"{self._default_version[:-1]}; trained on {trained}x{trained})"  # inside the parenthesis

    # --- commands ----------------------------------------------------------------------------------------
    def _known_command(self, a):
        if len(a) != 1:
            raise GtpError("syntax error")
        return "true" if a[0] in self.commands else "false"

    def _quit(self, a):
        self.quit = True
        return ""

    def _boardsize(self, a):
        if len(a) != 1 or not gtp_args.is_digits(a[0]):
            raise GtpError("syntax error")
        n = gtp_args.bounded_int(a[0], _MAX_COUNT)
        problem = self._size_problem(n) if n is not None else f"a number of {len(a[0])} digits"
        if problem:
            self._log(f"boardsize {a[0] if n is None and len(a[0]) <= 40 else n}: {problem}")
            raise GtpError("unacceptable size")
        self._set_size(n)
        self._clear_board([])
        return ""

    def _size_problem(self, n: int) -> str | None:
        """Why this engine cannot play ``n`` x ``n`` (None: it can): GTP's limit, the rules engine's, the net's
        (``policy.size_problem``; a policy without it plays only its own size)."""
        if not 2 <= n <= coords.GTP_MAX_SIZE:
            return f"GTP boards are 2x2 to {coords.GTP_MAX_SIZE}x{coords.GTP_MAX_SIZE}"
        if n in self._policies:
            return None
        try:
            Board(n)
        except ValueError as e:  # the rules engine's limit (2..19 today)
            return f"the rules engine: {e}"
        base = self._base
        ask = getattr(base, "size_problem", None)
        if ask is None:
            m = base.board_size
            return f"the net plays only {m}x{m}"
        return ask(n)

    def _set_size(self, n: int) -> None:
        """Play on ``n`` x ``n`` (checked by :meth:`_size_problem`): the policy for that size, an empty board."""
        if n not in self._policies:
            self._policies[n] = self._base.resized(n)
        if self._sized is not self._policies[n]:
            self.time.costs = {}  # another board, another cost
        self.policy = self._policies[n]
        self._takes_symmetries = _takes_symmetries(self.policy)
        self.size = n
        self._maybe_warm()

    def _clear_board(self, a):
        self.state = GameState(self.size)
        self.time.reset_clocks()
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

    def _apply(self, colour: int, flat: int) -> None:
        self.state.play(colour, flat)

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

    def _move_probabilities(self, colour: int) -> tuple[np.ndarray, int]:
        """genmove's policy for ``colour``, averaged over as many symmetries as the clock affords (measured)."""
        s = self.state
        k = 1
        if self._takes_symmetries:
            k = self.time.symmetries(colour, board_size=self.size, moves_played=len(s.moves))
        t0 = time.perf_counter()
        if k > 1:
            probs = self.policy.probabilities(s.moves, colour, s.setup, symmetries=k)
        else:
            probs = self.policy.probabilities(s.moves, colour, s.setup)
        self.time.measured(k, time.perf_counter() - t0)
        return probs, k

    def _choose_and_play(self, colour: int, *, play: bool, cleanup: bool = False) -> str:
        t0 = time.perf_counter()
        try:
            return self._choose(colour, play=play, cleanup=cleanup)
        finally:
            if play:
                self.time.spent(colour, time.perf_counter() - t0)

    def _choose(self, colour: int, *, play: bool, cleanup: bool) -> str:
        s = self.state
        probs, k = self._move_probabilities(colour)
        opponent_passed = bool(s.moves) and s.moves[-1] == (3 - colour, self.size * self.size)
        choice = choose_move(probs, s.board, colour, moves_played=len(s.moves), opponent_passed=opponent_passed,
                             komi=self.komi, settings=self.settings, rng=self.rng,
                             has_pass=bool(self.policy.has_pass), cleanup=cleanup)
        if choice.move == "resign":
            self._log(f"move {len(s.moves) + 1} {colour_letter(colour)}: resign")
            return "resign"
        vertex = coords.to_gtp(coords.from_flat(choice.move, self.size), self.size)
        sym = f", {k} symmetries" if k > 1 else ""
        self._log(f"move {len(s.moves) + 1} {colour_letter(colour)}: {vertex} ({choice.reason}, "
                  f"p={choice.probability:.3f}{sym})")
        if play:
            self._apply(colour, choice.move)
        return vertex

    def _undo(self, a):
        if a:
            raise GtpError("syntax error")
        if not self.state.undo():
            raise GtpError("cannot undo")
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

    def _estimate(self) -> life_death.Estimate:
        """The dead-stone estimate of the current position (:mod:`kifunet.play.life_death`, fixed seed), kept
        until the position changes: ``final_score``, ``final_status_list`` and ``kifunet-dead_gfx`` agree."""
        s = self.state
        key = (self.size, tuple(s.setup), tuple(s.moves))
        if self._estimate_cache is None or self._estimate_cache[0] != key:
            est = life_death.estimate(s.board.stones, self._next_colour())
            self._estimate_cache = (key, est)
        return self._estimate_cache[1]

    def _final_score(self, a):
        """Area score with the estimate's dead stones removed (Chinese counting, komi to white)."""
        return scoring.format_score(self._estimate().score(self.komi))

    def _final_status_list(self, a):
        """``final_status_list alive|dead|seki``: the stones of that status, one chain a line (GTP spec 6.3.5)."""
        if len(a) != 1 or a[0].lower() not in _STATUS:
            raise GtpError("syntax error")
        est = self._estimate()
        mask = est.status == _STATUS[a[0].lower()]
        return "\n".join(" ".join(self._gtp(p) for p in chain) for chain in chains_in(self.state.board, mask))

    def _dead_gfx(self, a):
        """GoGui ``gfx``: the estimate's dead stones (``MARK``), seki stones (``TRIANGLE``), the owned empty
        points (``BLACK`` / ``WHITE`` squares: ownership beyond 0.5) and the score (``TEXT``)."""
        if a:
            raise GtpError("syntax error")
        est = self._estimate()
        empty = self.state.board.stones == EMPTY
        own = est.ownership
        groups = [("MARK", est.dead()), ("TRIANGLE", est.seki()),
                  ("BLACK", empty & (own > 0.5)), ("WHITE", empty & (own < -0.5))]
        lines = [f"{label} " + " ".join(self._gtp(int(p)) for p in np.flatnonzero(m.reshape(-1)))
                 for label, m in groups if m.any()]
        lines.append(f"TEXT dead stones: {int(est.dead().sum())}, seki stones: {int(est.seki().sum())}; "
                     f"score {scoring.format_score(est.score(self.komi))} (komi {self.komi:g})")
        return "\n".join(lines)

    def _resign_switch(self, a):
        """``kifunet-resign on|off``: may the engine resign (``kifunet match`` sends ``off`` unless asked)."""
        if len(a) != 1 or a[0].lower() not in ("on", "off"):
            raise GtpError("syntax error")
        self.settings = dataclasses.replace(self.settings, resign=a[0].lower() == "on")
        return ""

    def _gtp(self, flat: int) -> str:
        return coords.to_gtp(coords.from_flat(int(flat), self.size), self.size)

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
        if len(a) != 1 or not gtp_args.is_digits(a[0]):
            raise GtpError("syntax error")
        if not self.state.is_empty():
            raise GtpError("board not empty")
        k = gtp_args.bounded_int(a[0], _MAX_COUNT)
        pts = self._handicap_points(-1 if k is None else k)
        self.state.place_handicap(pts)
        return " ".join(coords.to_gtp(coords.from_flat(p, self.size), self.size) for p in pts)

    def _set_free_handicap(self, a):
        if len(a) < 2:
            raise GtpError("syntax error")
        if not self.state.is_empty():
            raise GtpError("board not empty")
        pts = [self._vertex(v) for v in a]
        if len(set(pts)) != len(pts) or self.size * self.size in pts:
            raise GtpError("bad vertex list")
        self.state.place_handicap(pts)
        return ""

    def _set_random_seed(self, a):
        if len(a) != 1 or not gtp_args.is_digits(a[0].removeprefix("-")):
            raise GtpError("syntax error")
        try:
            seed = abs(int(a[0]))
        except ValueError:  # more digits than int() reads
            raise GtpError(f"syntax error: a seed of {len(a[0])} characters") from None
        self.rng = np.random.default_rng(seed)
        return ""

    def _policy_command(self, a):
        if not 1 <= len(a) <= 2:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        k = 10
        if len(a) == 2 and gtp_args.is_digits(a[1]):
            k = gtp_args.bounded_int(a[1], _MAX_COUNT)
            k = _MAX_COUNT if k is None else k  # more than there are moves: all of them
        s = self.state
        probs = self.policy.probabilities(s.moves, colour, s.setup)
        legal = s.board.legal_moves(colour)
        idx = top_moves(probs, legal, k)
        return " ".join(f"{coords.to_gtp(coords.from_flat(i, self.size), self.size)} {probs[i]:.4f}" for i in idx)

    def _policy_percent(self, a):
        """``kifunet-policy_percent COLOUR [K]``: GoGui's labels, the K most probable legal points in percent."""
        if not 1 <= len(a) <= 2 or (len(a) == 2 and not gtp_args.is_digits(a[1])):
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        k = gtp_gogui.LABELLED_MOVES if len(a) == 1 else gtp_args.bounded_int(a[1], _MAX_COUNT)
        s = self.state
        probs = self.policy.probabilities(s.moves, colour, s.setup)
        return gtp_gogui.policy_pspairs(probs, s.board.legal_moves(colour), self.size,
                                        _MAX_COUNT if k is None else k)

    # --- time (kifunet.play.time_manager) -------------------------------------------------------------------
    def _time_settings(self, parse, a):
        try:
            self.time.set(parse(a))
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        self._maybe_warm()
        return ""

    def _maybe_warm(self) -> None:
        """Under a time limit, measure :data:`~kifunet.play.time_manager.WARM_SYMMETRIES` in a background thread
        unless known (the engine answers at once; a genmove before it is done uses what is measured)."""
        k = time_manager.WARM_SYMMETRIES
        if self.time.settings.unlimited or not self._takes_symmetries or k in self.time.costs:
            return
        if self._warm is None or not self._warm.is_alive() or self._warm_policy is not self.policy:
            self._warm_policy = self.policy
            self._warm = threading.Thread(target=self._warm_symmetries, args=(self.policy, k),
                                          name="kifunet-symmetries", daemon=True)
            self._warm.start()

    def _warm_symmetries(self, policy, k: int) -> None:
        """Measure a call with ``k`` symmetries on the empty board, off the clock (the first call may compile
        the net for that batch; the second is the cost), so that a timed genmove may use k."""
        try:
            for _ in range(2):
                t0 = time.perf_counter()
                policy.probabilities([], BLACK, (), symmetries=k)
                seconds = time.perf_counter() - t0
        except Exception as e:  # the net did not load, or cannot batch: genmove keeps to what it measured
            self._log(f"measuring {k} symmetries failed: {type(e).__name__}: {e}")
            return
        if policy is self.policy:
            self.time.measured(k, seconds)
            self._log(f"{k} symmetries take {seconds * 1000:.1f} ms")

    def _time_left(self, a):
        try:
            word, seconds, stones = time_manager.parse_time_left(a)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        self.time.time_left(parse_colour(word), seconds, stones)
        return ""

    # --- SGF files (kifunet.play.gtp_sgf) ------------------------------------------------------------------
    def _loadsgf(self, a):
        try:
            path, rest = gtp_sgf.file_argument(a)
            if path is None or len(rest) > 1:
                raise gtp_sgf.LoadError("syntax error: loadsgf FILE [MOVE_NUMBER|VERTEX]")
            game = gtp_sgf.read_game(path, rest[0] if rest else None)
        except gtp_sgf.LoadError as e:
            raise GtpError(str(e)) from None
        problem = self._size_problem(game.size)
        if problem:
            raise GtpError(f"cannot load file '{path}': board size {game.size}x{game.size} is unacceptable: "
                           f"{problem}")
        komi = self.komi if game.komi is None else game.komi
        problem = scoring.komi_problem(komi, game.size)
        if problem:
            raise GtpError(f"cannot load file '{path}': {problem}")
        self._set_size(game.size)
        self.komi = komi
        self.state = GameState(self.size, game.setup, game.first, game.info)
        for colour, flat in game.moves:
            self._apply(colour, flat)
        return "black" if game.to_play == BLACK else "white"

    def _printsgf(self, a):
        try:
            path, rest = gtp_sgf.file_argument(a)
        except gtp_sgf.LoadError as e:
            raise GtpError(str(e)) from None
        if rest:
            raise GtpError("syntax error: printsgf [FILE]")
        s = self.state
        text = gtp_sgf.game_sgf(self.size, self.komi, s.setup, s.moves, self._first_colour(),
                                app=(self.name, _package_version()), info=s.info)
        if path is None or path == "-":
            return text
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            raise GtpError(f"cannot write file '{path}': {e.strerror or e}") from None
        return ""

    # --- GoGui analyze commands (kifunet.play.gtp_gogui) -----------------------------------------------------
    def _gogui_policy(self, a, *, dboard: bool):
        if len(a) != 1:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        s = self.state
        probs = self.policy.probabilities(s.moves, colour, s.setup)
        legal = s.board.legal_moves(colour)
        if dboard:
            return "\n" + gtp_gogui.policy_dboard(probs, legal, self.size, colour)
        return gtp_gogui.policy_gfx(probs, legal, self.size, colour, has_pass=bool(self.policy.has_pass))

    def _value_command(self, a):
        if len(a) != 1:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        s = self.state
        _, value = gtp_analysis.evaluate(self.policy, s.moves, colour, s.setup)
        if value is None:
            raise GtpError("the net has no value head")
        return gtp_gogui.value_line(value, colour)

    # --- analysis (arguments, formats and rules: kifunet.play.gtp_analysis) -------------------------------------
    def _first_colour(self) -> int:
        return self.state.first_colour()

    def _next_colour(self) -> int:
        return self.state.next_colour()

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
        for m in top_moves(probs, allowed, req.count()):
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
        best = top_moves(probs, ok, 1)
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


def _package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("kifunet")
    except metadata.PackageNotFoundError:
        return "dev"


def _default_version(policy) -> str:
    """``0.1.0 (DESCRIPTION; value head)`` or ``...; no value head: analysis winrate 0.5 is not an estimate)``:
    the first word stays the package version (Lizzie reads ``version``'s first word as ``MAJOR.MINOR``)."""
    value = "value head" if getattr(policy, "has_value", False) else gtp_analysis.NO_VALUE_NOTE
    return f"{_package_version()} ({policy.description}; {value})"


def _trained_size(policy) -> int:
    """The board size the net was trained on (``policy.trained_size``; a policy without it: its own size)."""
    return int(getattr(policy, "trained_size", None) or policy.board_size)


def _takes_symmetries(policy) -> bool:
    """Whether ``policy.probabilities`` takes ``symmetries=k`` (the symmetry-averaging API)."""
    try:
        params = inspect.signature(policy.probabilities).parameters
    except (TypeError, ValueError):
        return False
    return "symmetries" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def serve(engine: Engine, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    return engine.serve(stdin or sys.stdin, stdout or sys.stdout)
