"""GTP's time commands and the clock they set (:class:`kifunet.play.time_manager.TimeManager`); under a time
limit the symmetry costs are measured in a background thread so the engine answers at once."""

from __future__ import annotations

import threading
import time

from kifunet.data_prep.game import BLACK

from . import time_manager
from .gtp_protocol import GtpError, command, parse_colour


class TimeCommands:
    """The time handler group over ``engine`` (its ``policy`` and ``log``); ``symmetries``: without a limit."""

    def __init__(self, engine, symmetries: int):
        self.engine = engine
        self.time = time_manager.TimeManager(unlimited=symmetries)
        self.warm_thread: threading.Thread | None = None  # measuring WARM_SYMMETRIES after time settings
        self._warm_policy = None  # the policy it measures

    def measuring(self) -> bool:
        """Whether the measurement thread is running the net."""
        return self.warm_thread is not None and self.warm_thread.is_alive()

    def new_board(self, other_net: bool) -> None:
        """After ``boardsize`` / ``loadsgf``: forget the costs when the net changed, measure again if limited."""
        if other_net:
            self.time.costs = {}
        self._maybe_warm()

    def symmetries(self, colour: int, size: int, moves_played: int) -> int:
        """How many symmetries genmove averages for ``colour`` now."""
        return self.time.symmetries(colour, board_size=size, moves_played=moves_played)

    @command("time_settings")
    def time_settings(self, a):
        return self._set(time_manager.parse_time_settings, a)

    @command("kgs-time_settings")
    def kgs_time_settings(self, a):
        return self._set(time_manager.parse_kgs_time_settings, a)

    @command("time_left")
    def time_left(self, a):
        try:
            word, seconds, stones = time_manager.parse_time_left(a)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        self.time.time_left(parse_colour(word), seconds, stones)
        return ""

    @command("cputime")
    def cputime(self, a):
        return f"{time.process_time():.3f}"

    def _set(self, parse, a) -> str:
        try:
            self.time.set(parse(a))
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        self._maybe_warm()
        return ""

    def _maybe_warm(self) -> None:
        k = time_manager.WARM_SYMMETRIES
        if self.time.settings.unlimited or k in self.time.costs:
            return
        policy = self.engine.policy
        if self.warm_thread is None or not self.warm_thread.is_alive() or self._warm_policy is not policy:
            self._warm_policy = policy
            self.warm_thread = threading.Thread(target=self._warm, args=(policy, k), name="kifunet-symmetries",
                                                daemon=True)
            self.warm_thread.start()

    def _warm(self, policy, k: int) -> None:
        """Measure a call with ``k`` symmetries on the empty board, off the clock (the first call may compile
        the net for that batch; the second is the cost)."""
        try:
            for _ in range(2):
                t0 = time.perf_counter()
                policy.probabilities([], BLACK, (), symmetries=k)
                seconds = time.perf_counter() - t0
        except Exception as e:  # the net did not load, or cannot batch: genmove keeps to what it measured
            self.engine.log(f"measuring {k} symmetries failed: {type(e).__name__}: {e}")
            return
        if policy is self.engine.policy:
            self.time.measured(k, seconds)
            self.engine.log(f"{k} symmetries take {seconds * 1000:.1f} ms")
