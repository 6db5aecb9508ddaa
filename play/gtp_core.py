"""GTP's core commands: the protocol, the board, moves, undo, handicap, ``final_score`` (area score with the
estimate's dead stones removed) and ``final_status_list``."""

from __future__ import annotations

import math

from kifunet.data_prep.rules import life_death, scoring

from . import gtp_args
from .game_state import chains_in
from .gtp_protocol import MAX_COUNT, GtpError, command, parse_colour

PROTOCOL_VERSION = "2"

#: ``final_status_list``'s arguments -> the estimate's status (:mod:`kifunet.data_prep.rules.life_death`)
_STATUS = {"alive": life_death.ALIVE, "dead": life_death.DEAD, "seki": life_death.SEKI}


class CoreCommands:
    """The core handler group over ``engine`` (its ``game``, ``nets``, ``clock``, ``commands``, ``name``)."""

    def __init__(self, engine):
        self.engine = engine

    @command("protocol_version")
    def protocol_version(self, a):
        return PROTOCOL_VERSION

    @command("name")
    def name(self, a):
        return self.engine.name

    @command("version")
    def version(self, a):
        return self.engine.version

    @command("known_command")
    def known_command(self, a):
        if len(a) != 1:
            raise GtpError("syntax error")
        return "true" if a[0] in self.engine.commands else "false"

    @command("list_commands")
    def list_commands(self, a):
        return "\n".join(self.engine.commands)

    @command("quit")
    def quit(self, a):
        self.engine.quit = True
        return ""

    @command("boardsize")
    def boardsize(self, a):
        if len(a) != 1 or not gtp_args.is_digits(a[0]):
            raise GtpError("syntax error")
        n = gtp_args.bounded_int(a[0], MAX_COUNT)
        problem = self.engine.nets.size_problem(n) if n is not None else f"a number of {len(a[0])} digits"
        if problem:
            self.engine.log(f"boardsize {a[0] if n is None and len(a[0]) <= 40 else n}: {problem}")
            raise GtpError("unacceptable size")
        self.engine.set_size(n)
        return self.clear_board([])

    @command("clear_board")
    def clear_board(self, a):
        self.engine.game.clear()
        self.engine.clock.time.reset_clocks()
        return ""

    @command("komi")
    def komi(self, a):
        """``komi K``: one finite number with ``|K| <= N*N`` (no score on an N x N board can exceed that)."""
        if len(a) != 1:
            raise GtpError("syntax error")
        try:
            komi = float(a[0])
        except ValueError:
            raise GtpError("syntax error") from None
        problem = scoring.komi_problem(komi, self.engine.game.size)
        if problem:
            raise GtpError(("syntax error: " if not math.isfinite(komi) else "") + problem)
        self.engine.game.komi = komi
        return ""

    @command("play")
    def play(self, a):
        if len(a) != 2:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        if a[1].lower() == "resign":
            return ""
        game = self.engine.game
        flat = game.vertex(a[1])
        if not game.state.board.is_legal(flat, colour):
            raise GtpError("illegal move")
        game.state.play(colour, flat)
        return ""

    @command("undo")
    def undo(self, a):
        if a:
            raise GtpError("syntax error")
        if not self.engine.game.state.undo():
            raise GtpError("cannot undo")
        return ""

    @command("showboard")
    def showboard(self, a):
        return self.engine.game.showboard()

    @command("final_score")
    def final_score(self, a):
        game = self.engine.game
        return scoring.format_score(game.estimate().score(game.komi))

    @command("final_status_list")
    def final_status_list(self, a):
        """``final_status_list alive|dead|seki``: the stones of that status, one chain a line (GTP spec 6.3.5)."""
        if len(a) != 1 or a[0].lower() not in _STATUS:
            raise GtpError("syntax error")
        game = self.engine.game
        mask = game.estimate().status == _STATUS[a[0].lower()]
        return "\n".join(" ".join(game.gtp(p) for p in chain) for chain in chains_in(game.state.board, mask))

    @command("fixed_handicap", "place_free_handicap")
    def fixed_handicap(self, a):
        if len(a) != 1 or not gtp_args.is_digits(a[0]):
            raise GtpError("syntax error")
        game = self.engine.game
        if not game.state.is_empty():
            raise GtpError("board not empty")
        k = gtp_args.bounded_int(a[0], MAX_COUNT)
        pts = game.handicap_points(-1 if k is None else k)
        game.state.place_handicap(pts)
        return " ".join(game.gtp(p) for p in pts)

    @command("set_free_handicap")
    def set_free_handicap(self, a):
        if len(a) < 2:
            raise GtpError("syntax error")
        game = self.engine.game
        if not game.state.is_empty():
            raise GtpError("board not empty")
        pts = [game.vertex(v) for v in a]
        if len(set(pts)) != len(pts) or game.size * game.size in pts:
            raise GtpError("bad vertex list")
        game.state.place_handicap(pts)
        return ""
