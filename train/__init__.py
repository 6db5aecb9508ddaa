"""Training: input pipeline, data-parallel steps, optimizers, checkpoints, metrics, configs.

=====================  ==================================================================================
module                 what it holds
=====================  ==================================================================================
``train``              ``train_and_evaluate(config, workdir)``: the training loop (``kifunet train``)
``model_config``       the model a config describes (``build_model``), used by training and by eval
``steps``              the loss and the per-device train / eval steps over the axis ``'data'`` (explicit
                       ``pmean`` / ``psum``), per-example metrics, the metric windows kept on the devices
``parallel``           processes and devices: the mesh, replication, batch sharding, and ``data_parallel``, the
                       one place a per-device step is mapped with ``jax.shard_map``
``input_pipeline``     a dataset split -> shuffled, augmented, device-ready training batches (grain), assembled
                       from the next five
``windows``            which rows a shuffle window holds: row order, symmetries, history dropout, plane encoding
``batches``            a window's rows as a device-ready batch; the checkpointable batch iterator
``workers``            the grain worker processes' lifecycle (they end with the trainer)
``eval_batches``       a split in order, unaugmented, each host's share padded to whole batches
``prefetch``           a background thread that puts the next batches on the devices
``memory``             the run's memory estimate, checked before the first batch (CPU backend)
``preemption``         SIGTERM / SIGINT end a run at a step boundary with a checkpoint
``run_lock``           one trainer per run directory (a file lock)
``optim``              optimizers and learning-rate schedules (optax)
``checkpointing``      orbax checkpoints: state, input position, metadata
``nets``               a trained net rebuilt from its run directory (``load_net``, ``describe_net``) and the
                       run-directory lookups; below both eval and play, which load nets through it
``metric_writer``      JSON-lines metrics and TensorBoard event files
``configs``            named configs (``configs/<name>.py``; each docstring: command, hardware, result)
=====================  ==================================================================================
"""
