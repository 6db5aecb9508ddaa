"""How the training loop and the evaluation talk to the devices: every device-to-host copy goes through
:func:`fetch` (nothing per step); :class:`InFlight` bounds how far the host runs ahead, waiting without a copy."""

from __future__ import annotations

import collections

import jax


def fetch(tree):
    """``jax.device_get`` of ``tree``: the one explicit device-to-host copy."""
    return jax.device_get(tree)


class InFlight:
    """At most ``depth`` dispatched steps not yet finished: pushing a step's (undonated) output waits, without a
    copy, for the step ``depth`` back."""

    def __init__(self, depth: int):
        self.depth = max(1, int(depth))
        self._q: collections.deque = collections.deque()

    def push(self, token) -> None:
        self._q.append(token)
        while len(self._q) > self.depth:
            jax.block_until_ready(self._q.popleft())


__all__ = ["InFlight", "fetch"]
