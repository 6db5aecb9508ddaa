"""A trained net rebuilt from its run directory (``config.json`` and ``checkpoints/STEP``): :func:`load_net`,
:func:`describe_net` (no JAX or orbax) and the run-directory lookups they share. Importing this module loads
neither JAX nor orbax."""

from __future__ import annotations

import dataclasses
import logging
import os

from kifunet.data_prep.fileio import store


def is_run_dir(path: str) -> bool:
    """Whether ``path`` is a training run directory (it holds ``config.json``)."""
    return store.isfile(os.path.join(path, "config.json"))


def find_workdir(path: str) -> str:
    """The run directory of ``path``: itself, or the workdir above a ``checkpoints`` or step directory."""
    p = store.resolve(path)
    for cand in (p, os.path.dirname(p), os.path.dirname(os.path.dirname(p))):
        if is_run_dir(cand):
            return cand
    raise FileNotFoundError(f"{path}: not a training run directory (no config.json here or above)")


def read_config(workdir: str):
    """The run's resolved config (``config.json``) as an ``ml_collections.ConfigDict``."""
    import json

    import ml_collections

    with store.open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
        return ml_collections.ConfigDict(json.load(f))


def resolve_checkpoint(path: str, step: int | None = None) -> tuple[str, str]:
    """(run directory, what :func:`kifunet.train.checkpointing.load_weights` reads) for a run directory, its
    ``checkpoints`` directory or one step's directory; ``step`` picks that step of the run instead."""
    workdir = find_workdir(path)
    if step is None:
        return workdir, (path if store.resolve(path) != workdir else workdir)
    target = os.path.join(workdir, "checkpoints", str(int(step)))
    if not store.isdir(target):
        have = sorted((d for d in store.listdir(os.path.join(workdir, "checkpoints")) if d.isdigit()), key=int) \
            if store.isdir(os.path.join(workdir, "checkpoints")) else []
        raise FileNotFoundError(f"{workdir}: no checkpoint for step {step} (have: {', '.join(have) or 'none'})")
    return workdir, target


def _lookup(tree, names: tuple[str, ...]):
    """First value under any of ``names`` in nested dicts (breadth first); a {'name': ...} dict gives its name."""
    level = [tree]
    while level:
        nxt = []
        for d in level:
            if not isinstance(d, dict):
                continue
            for k in names:
                if k in d and d[k] not in (None, "", {}):
                    v = d[k]
                    return v.get("name") if isinstance(v, dict) else v
            nxt.extend(v for v in d.values() if isinstance(v, dict))
        level = nxt
    return None


def _data_shape(cfg: dict, meta: dict, dataset: str | None, feature_set: str | None,
                board_size: int | None) -> tuple[str, int]:
    """(feature set, board size): the arguments, else the training dataset's manifest (a mixture's first), else
    ``dataset``'s (with ``input.add_planes``), else the checkpoint's metadata."""
    from kifunet.data_prep.datasets.manifest import read_manifest as load_manifest
    from kifunet.data_prep.planes import features
    from kifunet.train.mixture import split_datasets

    tried = []
    added = (cfg.get("input") or {}).get("add_planes") or ""
    first = split_datasets(cfg.get("dataset") or "")[:1]
    for root in (first[0] if first else None, dataset):
        if feature_set and board_size:
            break
        if not root:
            continue
        tried.append(root)
        if store.isfile(os.path.join(root, "manifest.json")):
            m = load_manifest(root)
            feature_set = feature_set or features.with_constant_planes(m["features"]["name"], added)
            board_size = board_size or int(m["board_size"])
    feature_set = feature_set or _lookup(meta, ("feature_set", "features"))
    board_size = board_size or _lookup(meta, ("board_size",))
    if not feature_set or not board_size:
        raise FileNotFoundError("cannot tell the run's feature set and board size: no manifest.json in "
                                f"{' or '.join(tried) or 'config.dataset'}; pass the dataset the run was trained on "
                                "(or --features and --board-size)")
    return str(feature_set), int(board_size)


def step_dir(path: str, step: int | None = None) -> str:
    """The checkpoint step directory :func:`load_net` reads for ``path`` (a run directory: its newest step; its
    ``checkpoints`` directory: the newest; a step's directory: that one) or for ``step``; without JAX or orbax.
    ``FileNotFoundError`` when there is no step."""
    _, target = resolve_checkpoint(path, step)
    target = store.resolve(target)
    ck = os.path.join(target, "checkpoints") if store.isdir(os.path.join(target, "checkpoints")) else target
    if store.isdir(os.path.join(ck, "state")) or store.isfile(os.path.join(ck, "kifunet_checksums.json")):
        return ck  # a step's directory
    steps = [d for d in store.listdir(ck) if d.isdigit() and store.isdir(os.path.join(ck, d))] \
        if store.isdir(ck) else []
    if not steps:
        raise FileNotFoundError(f"{ck}: no checkpoint")
    return os.path.join(ck, max(steps, key=int))


def describe_net(path: str, *, step: int | None = None, dataset: str | None = None,
                 feature_set: str | None = None, board_size: int | None = None) -> dict:
    """What :func:`load_net` will load, from ``config.json`` and the step's JSON metadata only: ``workdir``,
    ``name``, ``step_dir``, ``step``, ``model``, ``model_kwargs``, ``rank_embedding``, ``feature_set``, ``board_size``
    and ``description`` (``MODEL from RUN step S``)."""
    import json

    workdir, _ = resolve_checkpoint(path, step)
    target = step_dir(path, step)
    meta = {}
    meta_path = os.path.join(target, "meta", "metadata")
    if store.isfile(meta_path):
        with store.open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    with store.open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
        raw = json.load(f)
    fs, n = _data_shape(raw, meta, dataset, feature_set, board_size)
    model = dict(raw.get("model") or {})
    name = model.get("name") or meta.get("model")
    if not name:  # a partial config: the defaults' model, as load_net completes it
        from kifunet.train.configs import default

        name = default.get_config().model.name
    at = meta.get("step")
    desc = f"{name} from {os.path.basename(workdir)}" + (f" step {at}" if at is not None else "")
    return {"workdir": workdir, "name": os.path.basename(workdir), "step_dir": target, "step": at, "model": name,
            "model_kwargs": dict(model.get("kwargs") or {}), "rank_embedding": bool(model.get("rank_embedding")),
            "feature_set": fs, "board_size": n, "description": desc}


@dataclasses.dataclass
class TrainedNet:
    """A trained model rebuilt from a run: the model (eval mode), its feature set, board size and ``info``."""

    model: object
    feature_set: str
    board_size: int
    info: dict


def load_net(path: str, *, step: int | None = None, dataset: str | None = None, feature_set: str | None = None,
             board_size: int | None = None, dtype: str | None = None) -> TrainedNet:
    """The net of a training run (its newest checkpoint, or ``step``, or the step directory named), rebuilt from
    ``config.json`` as training built it (in ``dtype`` if given) without initialisation, with the checkpoint's
    weights as host arrays. A checkpoint of another shape is a ``ValueError``."""
    from flax import nnx

    from kifunet.data_prep.planes import features
    from kifunet.train import checkpointing, model_config

    workdir, target = resolve_checkpoint(path, step)
    raw = read_config(workdir).to_dict()
    absl_log = logging.getLogger("absl")
    level = absl_log.level
    absl_log.setLevel(logging.ERROR)  # orbax's notes on opening a read-only manager are not news here
    try:
        weights, meta = checkpointing.load_weights(target)
    finally:
        absl_log.setLevel(level)
    fs, n = _data_shape(raw, meta, dataset, feature_set, board_size)
    spec = model_config.model_section(raw.get("model"))
    if dtype is not None:
        spec.dtype = dtype
    # abstractly: shapes and dtypes only, no initialiser runs and nothing compiles; the checkpoint fills it
    model = nnx.eval_shape(lambda: model_config.build_model(spec, seed=int(raw.get("seed", 0)), board_size=n,
                                                            in_planes=features.get(fs).num_planes))
    graph, params, extra = nnx.split(model, nnx.Param, ...)
    template = {"params": params, "extra": extra}
    want = {k: tuple(v.shape) for k, v in checkpointing.flatten_state(template).items()}
    missing = sorted(set(want) - set(weights))
    unexpected = sorted(set(weights) - set(want))
    wrong = sorted(k for k in set(want) & set(weights) if tuple(weights[k].shape) != want[k])
    if missing or unexpected or wrong:
        raise checkpointing.CheckpointMismatch(f"{target}: the checkpoint does not fit {spec.name} "
                                               f"({n}x{n}, {fs}): missing "
                         f"{missing[:3]}, unexpected {unexpected[:3]}, other shapes "
                         f"{[(k, tuple(weights[k].shape), want[k]) for k in wrong[:3]]}")
    restored = checkpointing.unflatten_state(template, {k: weights[k] for k in want})
    model = nnx.merge(graph, restored["params"], restored["extra"])
    model.eval()
    info = {"name": os.path.basename(workdir), "model": spec.name, "workdir": workdir,
            "checkpoint": store.resolve(target), "step": meta.get("step"), "positions": meta.get("positions"),
            "train_seconds": meta.get("train_seconds"), "train_dataset": raw.get("dataset"),
            "feature_set": fs, "board_size": n}
    return TrainedNet(model, fs, n, info)
