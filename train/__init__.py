"""Training: input pipeline, data-parallel steps, optimizers, checkpoints, metrics, configs.

=====================  ==================================================================================
module                 what it holds
=====================  ==================================================================================
``train``              ``train_and_evaluate(config, workdir)``: the training loop (``kifunet train``)
``data``               the datasets of a run, every split opened once (``TrainData``), passed along
``evaluation``         the evaluation of a run: sums over each dataset's evaluation split, fetched once
``dispatch``           the loop's device-to-host copies (``fetch``) and how far the host runs ahead (``InFlight``)
``model_config``       the model a config describes (``build_model``), used by training and by eval
``steps``              the loss and the per-device train / eval steps over the axis ``'data'`` (explicit
                       ``pmean`` / ``psum``), per-example metrics, the metric windows kept on the devices
``parallel``           processes and devices: the mesh, replication, batch sharding, and ``data_parallel``, the
                       one place a per-device step is mapped with ``jax.shard_map``
``input_pipeline``     the opened data -> shuffled, augmented, device-ready training batches (grain), assembled
                       from the next five
``windows``            which rows a shuffle window holds: row order, symmetries, history dropout, plane encoding
``batches``            a window's rows as a device-ready batch; the checkpointable batch iterator
``workers``            the grain worker processes' lifecycle (they end with the trainer)
``eval_batches``       a split in order, unaugmented, each host's share padded to whole batches
``prefetch``           a background thread that puts the next batches on the devices
``memory``             the run's memory estimate, checked before the first batch (CPU backend)
``preemption``         SIGTERM / SIGINT and the time limit end a run at a step boundary with a checkpoint
                       (``StopClock``)
``run_lock``           one trainer per run directory (a file lock)
``optim``              optimizers and learning-rate schedules (optax)
``checkpointing``      orbax checkpoints: state, input position, metadata
``nets``               a trained net rebuilt from its run directory (``load_net``, ``describe_net``) and the
                       run-directory lookups; below both eval and play, which load nets through it
``metric_writer``      JSON-lines metrics and TensorBoard event files; the trainer's progress and eval lines
``configs``            named configs (``configs/<name>.py``; each docstring: command, hardware, result)
=====================  ==================================================================================
"""
