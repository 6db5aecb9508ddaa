"""A base for the tests' stand-in policies: every member of :class:`kifunet.play.gtp_policy.GtpPolicy` that a test
does not set itself, as a net without a value, ownership or score head or profile input that plays only its own
size would have it.

A subclass sets ``board_size`` (and ``has_pass``) and defines ``probabilities(moves, colour, setup=(), *,
symmetries=1)``; ``evaluate`` gives its probabilities and no value.
"""

from __future__ import annotations

from kifunet.data_prep import profiles


class FakePolicy:
    board_size = 19
    has_pass: bool | None = False
    description = "fake"
    reads_profile = False
    has_value = False
    has_ownership = False
    has_score = False
    profile = profiles.UNKNOWN_PROFILE

    @property
    def trained_size(self) -> int:
        return self.__dict__.get("_trained_size", self.board_size)

    @trained_size.setter
    def trained_size(self, n: int) -> None:
        self._trained_size = n

    def probabilities(self, moves, colour, setup=(), *, symmetries=1):
        raise NotImplementedError

    def evaluate(self, moves, colour, setup=(), *, symmetries=1):
        return self.probabilities(moves, colour, setup), None

    def outputs(self, moves, colour, setup=(), *, symmetries=1):
        raise NotImplementedError

    def size_problem(self, n):
        return None if n == self.board_size else f"the net plays only {self.board_size}x{self.board_size}"

    def resized(self, n):
        raise ValueError(self.size_problem(n))

    def with_profile(self, profile):
        return self
