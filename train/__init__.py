"""Training: input pipeline, data-parallel steps, optimizers, checkpoints, metrics, configs.

Modules: ``train`` (``train_and_evaluate``, the loop), ``data`` (every split opened once), ``evaluation``,
``dispatch`` (device-to-host copies, steps in flight), ``model_config`` (the model a config describes),
``steps`` (loss and per-device steps over ``'data'``), ``parallel`` (mesh, sharding, ``data_parallel``),
``input_pipeline`` over ``windows``, ``batches``, ``workers``, ``mixture``, with ``eval_batches`` and ``prefetch``;
``memory`` (the estimate and its check), ``preemption`` (signals, time limit: ``StopClock``), ``run_lock``,
``run_dataset``, ``optim``, ``checkpointing`` (orbax), ``nets`` (a trained net rebuilt from its run directory),
``metric_writer``, ``aot`` (ahead-of-time compiles for other targets) and ``configs``."""
