"""How the training loop and the evaluation talk to the devices: :func:`fetch` and :class:`InFlight`.

Contract: every device-to-host copy of the loop and of an evaluation goes through :func:`fetch` (a metric window
once per logging interval and at evaluations and checkpoints, evaluation sums once per evaluation; nothing per
step: tests/test_train_loop.py counts the copies); :class:`InFlight` bounds how many dispatched steps the host may
run ahead of the devices (``config.max_steps_ahead``), waiting without a copy.
"""

from __future__ import annotations

import collections

import jax


def fetch(tree):
    """``jax.device_get`` of ``tree``: the one explicit device-to-host copy."""
    return jax.device_get(tree)


class InFlight:
    """At most ``depth`` dispatched steps not yet finished on the device: pushing a step's (undonated) output
    waits -- without a copy -- for the step ``depth`` back. This bounds the device memory held by queued input
    batches and keeps the host clock within ``depth`` steps of the device (the time limit reads it)."""

    def __init__(self, depth: int):
        self.depth = max(1, int(depth))
        self._q: collections.deque = collections.deque()

    def push(self, token) -> None:
        self._q.append(token)
        while len(self._q) > self.depth:
            jax.block_until_ready(self._q.popleft())


__all__ = ["InFlight", "fetch"]
