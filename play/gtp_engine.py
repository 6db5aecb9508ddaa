"""A GTP version 2 engine that plays a policy net's raw moves (no search): the protocol layer over its rooms.

:class:`Engine` reads a line, finds its handler by name in ``commands`` (methods marked with
:func:`kifunet.play.gtp_protocol.command` in the handler groups) and writes the response; ``list_commands``
answers in the order of :data:`LISTED`. A handler raising anything but
:class:`~kifunet.play.gtp_protocol.GtpError` is answered ``? internal error: ...`` and the session goes on. The
rooms, error texts and response format: docs/playing.md (The engine's protocol)."""

from __future__ import annotations

import queue
import threading
from typing import TextIO

import numpy as np

from kifunet.data_prep import profiles

from . import gtp_analysis, time_manager
from .game_state import GameState
from .gtp_analyze import Analysis, AnalysisCommands
from .gtp_core import CoreCommands
from .gtp_game import Game
from .gtp_gogui import GoGuiCommands
from .gtp_moves import MoveCommands
from .gtp_policy import GtpPolicy, Nets
from .gtp_protocol import GtpError, handlers
from .gtp_sgf import SgfCommands
from .gtp_time import TimeCommands
from .move_choice import PlaySettings

#: the control characters :meth:`Engine.handle` drops from a line (GTP spec 2.2: all but HT and LF), as a
#: ``str.translate`` table (one pass in C over a line of any length)
_CONTROL = {c: None for c in (*range(9), *range(11, 32), 127)}

#: every command, in the order ``list_commands`` answers them (each is one handler group's)
LISTED = ("protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
          "clear_board", "komi", "play", "genmove", "reg_genmove", "kgs-genmove_cleanup", "undo", "showboard",
          "final_score", "final_status_list", "kifunet-dead_gfx", "kifunet-resign", "fixed_handicap",
          "place_free_handicap", "set_free_handicap", "time_settings", "time_left", "kgs-time_settings",
          "cputime", "loadsgf", "printsgf", "gogui-analyze_commands", "kifunet-policy_gfx",
          "kifunet-policy_dboard", "kifunet-value", "kifunet-ownership_gfx", "kifunet-score", "set_random_seed",
          "kifunet-policy", "kifunet-policy_percent", "kifunet-profile", "lz-analyze", "kata-analyze",
          "lz-genmove_analyze", "kata-genmove_analyze")


class Engine:
    """A GTP session over a policy: :meth:`handle` answers one line, :meth:`serve` runs a session. Rooms:
    ``nets``, ``game``, ``clock``, ``moves``; ``commands``: every handler by name; ``analysis_blocks`` (blocks an
    analysis answers in :meth:`handle`), ``analysis_pv`` (longest PV), ``symmetries`` (averaged without a time
    limit), ``profile`` (the game profile's fields; None: the policy's own known ones)."""

    def __init__(self, policy: GtpPolicy, *, settings: PlaySettings | None = None, komi: float = 7.5,
                 name: str = "kifunet", version: str = "", log: TextIO | None = None, analysis_blocks: int = 1,
                 analysis_pv: int = gtp_analysis.DEFAULT_PV_LENGTH, symmetries: int = 1, profile=None):
        if not 1 <= symmetries <= time_manager.MAX_SYMMETRIES:
            raise ValueError(f"symmetries must be in 1..{time_manager.MAX_SYMMETRIES}, not {symmetries}")
        self.nets = Nets(policy, profile)  # ValueError: bad profile text
        self.game = Game(policy.board_size, komi)
        self.settings = settings or PlaySettings()
        self.rng = np.random.default_rng(self.settings.seed)
        self.name = name
        self._version = version  # "" -> the nets' version text
        self._log_file = log
        self.quit = False
        self.analysis_blocks = analysis_blocks
        self.analysis_pv = analysis_pv
        self.clock = TimeCommands(self, symmetries)
        self.moves = MoveCommands(self)
        found: dict = {}
        for group in (CoreCommands(self), self.moves, self.clock, SgfCommands(self), GoGuiCommands(self),
                      AnalysisCommands(self)):
            found.update(handlers(group))
        if set(found) != set(LISTED):
            raise RuntimeError(f"commands without a place in LISTED or a handler: {set(found) ^ set(LISTED)}")
        self.commands = {name: found[name] for name in LISTED}
        self._streaming = False  # inside serve(): an analysis command leaves its run in self._analysis
        self._analysis: gtp_analysis.AnalysisRun | None = None

    # --- what the handler groups read -------------------------------------------------------------------------
    @property
    def policy(self) -> GtpPolicy:
        """The policy of the current board size, given :meth:`game_profile` when the net reads a profile."""
        return self.nets.policy(self.game.komi, self.game.state.handicap_stones())

    def game_profile(self) -> profiles.Profile:
        """The profile the net is given before the policy's rank rule."""
        return self.nets.game_profile(self.game.komi, self.game.state.handicap_stones())

    @property
    def state(self) -> GameState:
        return self.game.state

    @property
    def size(self) -> int:
        return self.game.size

    @property
    def komi(self) -> float:
        return self.game.komi

    @property
    def version(self) -> str:
        """``version``'s answer: the constructor's, else :meth:`kifunet.play.gtp_policy.Nets.version`."""
        return self._version or self.nets.version(self.game.size)

    def set_size(self, n: int) -> None:
        """Play on an empty ``n`` x ``n`` board (checked by ``nets.size_problem``) with the policy for that size."""
        changed = self.nets.set_size(n)
        self.game.clear(n)
        self.clock.new_board(changed)

    def measuring(self) -> bool:
        """Whether a background thread is running the net (the symmetry measurement after time settings): a
        process that ends now must leave with ``os._exit``, as a thread still inside XLA aborts at exit."""
        return self.clock.measuring()

    def log(self, msg: str) -> None:
        """Write ``msg`` to the log (the constructor's ``log``; nothing without one)."""
        if self._log_file is not None:
            print(msg, file=self._log_file, flush=True)

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
            self.log(f"internal error in {cmd}: {type(e).__name__}: {e}")
            return f"?{cid} internal error: {type(e).__name__}: {e}\n\n"
        if isinstance(out, Analysis):
            return self._analysis_response(cid, out)
        return f"={cid} {out}\n\n"

    def _analysis_response(self, cid: str, a: Analysis) -> str:
        head = f"={cid}\n"
        if a.play is not None:  # genmove_analyze: synchronous
            return f"{head}{a.first_block}play {a.play}\n\n"
        if self._streaming:  # serve() writes the next blocks and the final blank line
            self._analysis = a.run
            return head + a.run.block()
        body = "".join(a.run.block() for _ in range(self.analysis_blocks))
        return head + body + "\n" if body else f"={cid} \n\n"  # no info line: an empty response

    def serve(self, stdin: TextIO, stdout: TextIO) -> int:
        """Answer stdin's lines on stdout until ``quit`` or end of input, streaming analyses (stdin read on a
        thread into a queue)."""
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
                    self.log(f"internal error in analysis: {type(e).__name__}: {e}")
                    interval = None
                    continue
                if block:
                    stdout.write(block)
                    stdout.flush()
                continue
            stdout.write("\n")
            stdout.flush()
            return line
