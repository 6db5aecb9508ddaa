"""GTP commands that choose moves or say what the net thinks: ``genmove`` and its forms
(:func:`kifunet.play.move_choice.choose_move`), ``kifunet-policy``, ``set_random_seed``, ``kifunet-resign``,
``kifunet-profile``."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from kifunet.data_prep import profiles
from kifunet.eval.legality import top_moves

from . import gtp_args
from .gtp_protocol import MAX_COUNT, GtpError, colour_letter, command, parse_colour
from .move_choice import choose_move


class MoveCommands:
    """The move handler group over ``engine`` (its ``game``, ``nets``, ``clock``, ``settings``, ``rng``)."""

    def __init__(self, engine):
        self.engine = engine

    @command("genmove")
    def genmove(self, a):
        return self.choose_and_play(self._colour(a), play=True)

    @command("reg_genmove")
    def reg_genmove(self, a):
        return self.choose_and_play(self._colour(a), play=False)

    @command("kgs-genmove_cleanup")
    def genmove_cleanup(self, a):
        return self.choose_and_play(self._colour(a), play=True, cleanup=True)

    @staticmethod
    def _colour(a) -> int:
        if len(a) != 1:
            raise GtpError("syntax error")
        return parse_colour(a[0])

    def choose_and_play(self, colour: int, *, play: bool, cleanup: bool = False) -> str:
        """Choose ``colour``'s move (``resign``, ``pass`` or a vertex), play it when ``play``; the time it took
        is spent from ``colour``'s clock when played."""
        t0 = time.perf_counter()
        try:
            return self._choose(colour, play=play, cleanup=cleanup)
        finally:
            if play:
                self.engine.clock.time.spent(colour, time.perf_counter() - t0)

    def _probabilities(self, colour: int) -> tuple[np.ndarray, int]:
        """genmove's policy for ``colour``, averaged over as many symmetries as the clock affords (measured)."""
        e, s = self.engine, self.engine.game.state
        k = e.clock.symmetries(colour, e.game.size, len(s.moves))
        t0 = time.perf_counter()
        if k > 1:
            probs = e.policy.probabilities(s.moves, colour, s.setup, symmetries=k)
        else:
            probs = e.policy.probabilities(s.moves, colour, s.setup)
        e.clock.time.measured(k, time.perf_counter() - t0)
        return probs, k

    def _choose(self, colour: int, *, play: bool, cleanup: bool) -> str:
        e, game = self.engine, self.engine.game
        s = game.state
        probs, k = self._probabilities(colour)
        opponent_passed = bool(s.moves) and s.moves[-1] == (3 - colour, game.size * game.size)
        choice = choose_move(probs, s.board, colour, moves_played=len(s.moves), opponent_passed=opponent_passed,
                             komi=game.komi, settings=e.settings, rng=e.rng, has_pass=bool(e.policy.has_pass),
                             cleanup=cleanup)
        if choice.move == "resign":
            e.log(f"move {len(s.moves) + 1} {colour_letter(colour)}: resign")
            return "resign"
        vertex = game.gtp(choice.move)
        sym = f", {k} symmetries" if k > 1 else ""
        e.log(f"move {len(s.moves) + 1} {colour_letter(colour)}: {vertex} ({choice.reason}, "
              f"p={choice.probability:.3f}{sym})")
        if play:
            s.play(colour, choice.move)
        return vertex

    @command("kifunet-policy")
    def policy(self, a):
        """``kifunet-policy COLOUR [K]``: the K (default 10) most probable legal moves and their probabilities."""
        if not 1 <= len(a) <= 2:
            raise GtpError("syntax error")
        colour = parse_colour(a[0])
        k = 10
        if len(a) == 2 and gtp_args.is_digits(a[1]):
            k = gtp_args.bounded_int(a[1], MAX_COUNT)
            k = MAX_COUNT if k is None else k  # more than there are moves: all of them
        game = self.engine.game
        s = game.state
        probs = self.engine.policy.probabilities(s.moves, colour, s.setup)
        idx = top_moves(probs, s.board.legal_moves(colour), k)
        return " ".join(f"{game.gtp(i)} {probs[i]:.4f}" for i in idx)

    @command("set_random_seed")
    def set_random_seed(self, a):
        if len(a) != 1 or not gtp_args.is_digits(a[0].removeprefix("-")):
            raise GtpError("syntax error")
        try:
            seed = abs(int(a[0]))
        except ValueError:  # more digits than int() reads
            raise GtpError(f"syntax error: a seed of {len(a[0])} characters") from None
        self.engine.rng = np.random.default_rng(seed)
        return ""

    @command("kifunet-resign")
    def resign_switch(self, a):
        """``kifunet-resign on|off``: may the engine resign (``kifunet match`` sends ``off`` unless asked)."""
        if len(a) != 1 or a[0].lower() not in ("on", "off"):
            raise GtpError("syntax error")
        self.engine.settings = dataclasses.replace(self.engine.settings, resign=a[0].lower() == "on")
        return ""

    @command("kifunet-profile")
    def profile(self, a):
        """``kifunet-profile``: the profile's fields as set; ``kifunet-profile TEXT``: set them."""
        nets = self.engine.nets
        if not a:
            from kifunet.play.policy import profile_text

            return profile_text(nets.profile_fields)
        try:
            fields = profiles.parse_fields(" ".join(a))
        except ValueError as e:
            raise GtpError(str(e).splitlines()[0]) from None
        nets.profile_fields = fields
        if not nets.sized.reads_profile:
            self.engine.log("kifunet-profile: this net has no profile input; the profile changes nothing")
        return ""
