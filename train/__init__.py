"""Training: input pipeline, data-parallel steps, optimizers, checkpoints, metrics, configs.

Entry points: ``kifunet train --config train/configs/X.py --workdir DIR`` and
:func:`kifunet.train.train.train_and_evaluate`. Modules: :mod:`~kifunet.train.input_pipeline` (grain),
:mod:`~kifunet.train.parallel` (the per-device step and the one ``jax.shard_map``),
:mod:`~kifunet.train.optim`, :mod:`~kifunet.train.checkpointing` (orbax), :mod:`~kifunet.train.metric_writer`,
:mod:`~kifunet.train.configs`.
"""
