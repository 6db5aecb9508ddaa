"""Training: input pipeline, data-parallel steps, optimizers, checkpoints, metrics, configs.

=====================  ==================================================================================
module                 what it holds
=====================  ==================================================================================
``train``              ``train_and_evaluate(config, workdir)``: the training loop (``kifunet train``)
``model_config``       the model a config describes (``build_model``), used by training and by eval
``parallel``           the per-device step over the axis ``'data'`` with explicit ``pmean``, mapped once
                       with ``jax.shard_map``; losses and per-example metrics
``input_pipeline``     a dataset split -> shuffled, augmented, device-ready batches (grain)
``optim``              optimizers and learning-rate schedules (optax)
``checkpointing``      orbax checkpoints: state, input position, metadata
``metric_writer``      JSON-lines metrics and TensorBoard event files
``configs``            named configs (``configs/<name>.py``; each docstring: command, hardware, result)
=====================  ==================================================================================
"""
