"""The policy a GTP engine plays: what it needs of a net (:class:`GtpPolicy`) and one copy per board size and
game profile (:class:`Nets`)."""

from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from kifunet.data_prep import coords, profiles
from kifunet.data_prep.rules.board import Board
from kifunet.models.forward import Outputs

from . import gtp_analysis
from .gtp_protocol import package_version

Moves = Sequence[tuple[int, int]]


@runtime_checkable
class GtpPolicy(Protocol):
    """A net as the GTP engine plays it (each member: docs/playing.md, The policy interface)."""

    board_size: int
    trained_size: int
    description: str
    has_pass: bool | None
    reads_profile: bool
    profile: profiles.Profile

    @property
    def has_value(self) -> bool: ...

    @property
    def has_ownership(self) -> bool: ...

    @property
    def has_score(self) -> bool: ...

    def probabilities(self, moves: Moves, colour: int, setup: Moves = (), *, symmetries: int = 1) -> np.ndarray: ...

    def evaluate(self, moves: Moves, colour: int, setup: Moves = (), *,
                 symmetries: int = 1) -> tuple[np.ndarray, float | None]: ...

    def outputs(self, moves: Moves, colour: int, setup: Moves = (), *, symmetries: int = 1) -> Outputs: ...

    def size_problem(self, n: int) -> str | None: ...

    def resized(self, n: int) -> "GtpPolicy": ...

    def with_profile(self, profile: profiles.Profile) -> "GtpPolicy": ...


def known_fields(profile: profiles.Profile) -> dict:
    """The fields of ``profile`` that say something (not None; handicap when not 0), as a
    :func:`kifunet.data_prep.profiles.parse_fields` dict."""
    out = {k: v for k, v in dataclasses.asdict(profile).items() if v is not None}
    if not out.get("handicap"):
        out.pop("handicap", None)
    return out


class Nets:
    """The policy per board size and profile: ``policy.resized(N)`` once per size, ``with_profile(p)`` once per
    (size, profile). ``profile``: the user's fields (text or dict; None: the known fields of ``policy.profile``)."""

    def __init__(self, policy: GtpPolicy, profile=None):
        if profile is None:
            profile = known_fields(policy.profile)
        self.profile_fields = (dict(profile) if isinstance(profile, dict)
                               else profiles.parse_fields(profile))  # ValueError: bad text
        self.base = policy
        self.sized = policy  # the policy of the current size
        self._by_size = {policy.board_size: policy}
        self._profiled: dict = {}  # (id of the sized policy, Profile) -> that policy given the profile
        self._default_version: str | None = None

    def policy(self, komi: float, handicap: int) -> GtpPolicy:
        """The policy of the current size, given :meth:`game_profile` when the net reads a profile (the same
        object while neither changes)."""
        sized = self.sized
        if not sized.reads_profile:
            return sized
        profile = self.game_profile(komi, handicap)
        key = (id(sized), profile)
        got = self._profiled.get(key)
        if got is None:
            got = self._profiled[key] = sized.with_profile(profile)
        return got

    def game_profile(self, komi: float, handicap: int) -> profiles.Profile:
        """The fields set, with the game's komi and handicap where they set none."""
        fields = dict(self.profile_fields)
        fields.setdefault("komi", float(komi))
        fields.setdefault("handicap", handicap)
        return profiles.Profile(**fields)

    def size_problem(self, n: int) -> str | None:
        """Why the engine cannot play ``n`` x ``n`` (None: it can): GTP's limit, the rules engine's, the net's."""
        if not 2 <= n <= coords.GTP_MAX_SIZE:
            return f"GTP boards are 2x2 to {coords.GTP_MAX_SIZE}x{coords.GTP_MAX_SIZE}"
        if n in self._by_size:
            return None
        try:
            Board(n)
        except ValueError as e:  # the rules engine's limit
            return f"the rules engine: {e}"
        return self.base.size_problem(n)

    def set_size(self, n: int) -> bool:
        """Play ``n`` x ``n`` (checked by :meth:`size_problem`); whether the sized policy changed."""
        if n not in self._by_size:
            self._by_size[n] = self.base.resized(n)
        changed = self.sized is not self._by_size[n]
        self.sized = self._by_size[n]
        return changed

    def version(self, size: int) -> str:
        """``0.1.0 (DESCRIPTION; value head)`` (or ``; no value head: ...``), plus ``; trained on NxN`` off the
        trained size; the first word stays the package version (Lizzie reads it)."""
        if self._default_version is None:
            value = "value head" if self.base.has_value else gtp_analysis.NO_VALUE_NOTE
            self._default_version = f"{package_version()} ({self.base.description}; {value})"
        trained = self.base.trained_size
        if trained == size:
            return self._default_version
        return f"{self._default_version[:-1]}; trained on {trained}x{trained})"
