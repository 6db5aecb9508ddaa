"""Lifecycle of the input pipeline's grain worker processes: :func:`exit_with_parent` is their
``worker_init_fn``, so none outlives the trainer."""

from __future__ import annotations

from kifunet.parent_watch import PARENT_POLL_S, exit_with_parent  # noqa: F401 -- the workers' init, re-exported


def mark_absl_flags_parsed() -> None:
    """grain's worker processes read absl flags; outside an absl app nothing parsed them."""
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
