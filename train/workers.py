"""Lifecycle of the input pipeline's grain worker processes: they end with the trainer, whatever ends it.

Contract: :func:`exit_with_parent` (:mod:`kifunet.parent_watch`) is the ``worker_init_fn`` of ``mp_prefetch``
(:func:`kifunet.train.input_pipeline.train_iterator`), so no worker outlives a trainer killed without closing its
iterator. :func:`mark_absl_flags_parsed` runs in the trainer before the first worker starts.
"""

from __future__ import annotations

from kifunet.parent_watch import PARENT_POLL_S, exit_with_parent  # noqa: F401 -- the workers' init, re-exported


def mark_absl_flags_parsed() -> None:
    """grain's worker processes read absl flags; outside an absl app nothing parsed them."""
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
