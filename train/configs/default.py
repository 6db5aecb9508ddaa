"""Every training option with its default; the per-row configs start from :func:`get_config` and override
(:func:`derive`: the defaults with some keys set). Durations are in positions (training examples), never epochs."""

from __future__ import annotations

import ml_collections


def get_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    # directory built by `kifunet build` (manifest.json + shards), or several separated by commas, mixed in every
    # batch (input.mix_weights; train/mixture.py), each evaluated on its own eval_split
    c.dataset = ""
    c.train_split = "train"
    c.eval_split = "test"  # "" = no evaluation

    c.model = _model()
    c.expect_features = ""  # feature set the config is written for; a dataset built with another is refused

    c.batch_size = 256  # global: all devices of all hosts; must divide by the device count
    c.train_positions = 1_000_000  # length of the run; steps = ceil(train_positions / batch_size)
    c.seed = 0  # model init and data order
    c.loss = "cross_entropy"  # or "l2" (squared error of the softmax: Cazenave, part of GoNN's runs)
    # nets with a value head (model.has_value): loss = policy loss + value_weight x value MSE over the rows whose
    # game result is known (train/steps.py); 0.01 is AlphaGo Zero's supervised setting. Policy-only nets ignore it.
    c.value_weight = 0.01
    # nets with ownership / score heads (model.kwargs.ownership_head / score_head; ResNets and GARB): weights of
    # their losses, masked to the games that ended by counting (train/steps.py); 0 = off, the default
    c.ownership_weight = 0.0
    c.score_weight = 0.0
    c.batchnorm = "per_device"  # or "sync" (statistics over the global batch); see train/steps.py
    # precision of float32 convolutions and matmuls: "default" (the backend's: TF32 on recent NVIDIA GPUs, one bfloat16
    # pass on TPUs), "high" or "highest" (full float32) (train/steps.py MATMUL_PRECISIONS; docs/training.md)
    c.matmul_precision = "default"

    c.optimizer = _optimizer()
    c.schedule = _schedule()
    c.input = _input()

    c.eval_batch_size = 1024  # global
    c.eval_every_positions = 1_000_000
    c.eval_positions = 0  # evaluate on the first N rows of eval_split (rows are pre-shuffled); 0 = all
    c.final_eval_positions = 0  # the evaluation after the last step; 0 = all rows

    c.log_every_steps = 100
    c.checkpoint_every_positions = 1_000_000
    # also a checkpoint every this many minutes of wall time (host clock; 0 = off): bounds what a preemption without
    # SIGTERM (kill -9, a lost host) loses, whatever the step time; a SIGTERM saves at once (train/preemption.py)
    c.checkpoint_every_minutes = 5.0
    c.keep_checkpoints = 3
    c.async_checkpoints = True
    c.init_from = ""  # workdir or checkpoint: initial weights only (ignored when the workdir has a checkpoint)
    # resuming a run on other datasets than it trained on is refused unless True (then recorded: train/run_dataset.py)
    c.allow_dataset_change = False
    c.time_limit_s = 0.0  # stop (checkpoint, final eval) after this many seconds of training; 0 = none
    # steps the host may dispatch before the device finished them (it then waits, without a copy): enough to
    # keep the device busy, few enough to bound the input batches queued in device memory and to keep the
    # time limit within a few step times (train/train.py)
    c.max_steps_ahead = 2
    c.num_devices = 0  # 0 = all devices (single-process runs may use fewer)
    # on a CPU backend, make this many JAX devices before JAX starts (0 = JAX's default, one): the data-parallel
    # step then runs one shard per core. cpu_small's step on 2 cores: 727 positions/s with one device, 1,519
    # with cpu_devices=2 (benchmarks/bench_train_step.py). Per-device BatchNorm statistics follow `batchnorm`.
    c.cpu_devices = 0
    return c


def derive(base: ml_collections.ConfigDict | None = None, **values) -> ml_collections.ConfigDict:
    """``base`` (default: :func:`get_config`) with ``values`` set, as ``ConfigDict.update`` sets them: a dict
    given for a section (``model``, ``model=dict(kwargs=...)``, ``optimizer``, ``schedule``, ``input``) sets only
    the keys it names, in the order given; a key the section lacks is added."""
    c = get_config() if base is None else base
    c.update(values)
    return c


def paper_cadence(eval_every: int, checkpoint_every: int, log_every: int) -> dict:
    """The keys a long run of a paper's config sets (for :func:`derive`): an evaluation on the first 200,000
    rows every ``eval_every`` positions, a checkpoint every ``checkpoint_every`` positions, a log line every
    ``log_every`` steps."""
    return dict(eval_every_positions=eval_every, eval_positions=200_000, checkpoint_every_positions=checkpoint_every,
                log_every_steps=log_every)


def _model() -> ml_collections.ConfigDict:
    """The network: its name in :func:`kifunet.models.names`, dtype, rank and profile inputs, constructor overrides."""
    m = ml_collections.ConfigDict()
    m.name = "maddison_tiny"  # kifunet.models.names()
    m.dtype = "float32"  # compute dtype: float32 or bfloat16 (parameters stay float32)
    m.rank_embedding = False  # learned rank vector (models built with rank_embedding=True)
    # the game profile (data_prep/profiles.py: ranks, date, source, time control, handicap, komi) through an MLP
    # of this many hidden units added where the rank vector is; 0 = no profile input
    m.profile_embedding = 0
    m.kwargs = ml_collections.ConfigDict()  # constructor overrides (e.g. layers, filters)
    return m


def _optimizer() -> ml_collections.ConfigDict:
    """The optimizer (``sgd``, ``adam`` or ``adamw``) and its weight decay, clipping and multipliers."""
    o = ml_collections.ConfigDict()
    o.name = "sgd"  # sgd | adam | adamw
    o.momentum = 0.9  # sgd; 0 = plain SGD
    o.nesterov = False
    o.b1 = 0.9  # adam / adamw
    o.b2 = 0.999
    o.eps = 1e-8
    o.weight_decay = 0.0  # L2: adds wd * w to the gradient (adamw: decoupled)
    o.decay_mask = "no_bn"  # no_bn | all | kernels
    o.clip_norm = 0.0  # global-norm gradient clipping; 0 = off
    o.lr_multipliers = True  # the model's per-parameter multipliers (GoNN centre taps)
    return o


def _schedule() -> ml_collections.ConfigDict:
    """The learning-rate schedule (train/optim.py)."""
    s = ml_collections.ConfigDict()
    s.name = "constant"  # constant | step | gonn | cosine (train/optim.py)
    s.lr = 0.05
    s.warmup_positions = 0
    s.start_positions = 0  # step: first drop at start_positions
    s.every_positions = 1_000_000  # step, gonn: drop interval
    s.factor = 0.5  # step: multiplier per drop
    s.offset = 8.0  # gonn
    s.power = 2.0  # gonn
    s.end_fraction = 0.0  # cosine: final lr / lr
    return s


def _input() -> ml_collections.ConfigDict:
    """The input pipeline: symmetries, history dropout, shuffle windows, workers, dataset mixing, profile dropout."""
    i = ml_collections.ConfigDict()
    i.symmetry = "example"  # example | batch | none: random dihedral symmetry per position / batch
    i.history_dropout = "none"  # none | all | cascade (train/windows.py)
    i.history_p = 0.0  # "all": probability a position loses its history planes
    i.history_keep_probs = (0.90, 0.95, 0.95, 0.98, 0.98)  # "cascade": GoNN write.exe
    i.window_blocks = 16  # blocks per shuffle window
    i.block_rows = 0  # rows per block; 0 = the dataset's HDF5 chunk rows
    i.workers = 1  # grain worker processes building windows; 0 = a thread of the main process
    i.host_dtype = "uint8"  # planes leave the host as uint8 (cast on the device) | float32 | bfloat16
    i.prefetch = 2  # batches put on the devices ahead of the step
    # several datasets: each one's share of the training rows, comma-separated positive numbers (normalised), one per
    # dataset; "" = in proportion to their training rows
    i.mix_weights = ""
    i.add_planes = ""  # constant-only feature sets read on top of the dataset's, e.g. "rank_planes"
    # a profiled net in training: each profile field of each row is made unknown with this probability, so that
    # the net also learns to predict when a user leaves a field out
    i.profile_dropout = 0.1
    return i
