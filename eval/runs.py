"""Training run directories, as eval sees them: find them, and load one as a :class:`Predictor`.

A run directory (the ``--workdir`` of ``kifunet train``) holds ``config.json``, orbax checkpoints, and the
JSON-lines metrics ``metrics_train.jsonl`` / ``metrics_eval.jsonl``; ``kifunet eval`` adds ``eval/*.json``.
Eval reads the checkpoint through :mod:`kifunet.train.checkpointing` and rebuilds the model with
:func:`kifunet.models.create` from the run's config; nothing else of the training code is used.

Notebook settings (environment variables, read by :func:`run_dirs_from_env`):

=====================  =================================================================================
``KIFUNET_RUN``        run directories separated by ``:`` (``os.pathsep``); unset or empty: every
                       directory under the repository's ``runs/`` that holds a ``config.json``
``KIFUNET_FIGURES``    where notebooks write their PNGs; default ``figures/`` in the first run directory
=====================  =================================================================================
"""

from __future__ import annotations

import glob
import logging
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "config.json"))


def run_dirs_from_env(*, newest_only: bool = False) -> list[str]:
    """Run directories named by ``KIFUNET_RUN``, else those under ``runs/`` (newest first)."""
    env = os.environ.get("KIFUNET_RUN", "").strip()
    if env:
        dirs = [d for d in env.split(os.pathsep) if d]
        missing = [d for d in dirs if not os.path.isdir(d)]
        if missing:
            raise FileNotFoundError(f"KIFUNET_RUN names missing directories: {', '.join(missing)}")
    else:
        found = [d for d in glob.glob(str(REPO_ROOT / "runs" / "*")) if is_run_dir(d)]
        dirs = sorted(found, key=os.path.getmtime, reverse=True)
        if not dirs:
            raise FileNotFoundError(f"no run directories under {REPO_ROOT / 'runs'}; train one "
                                    "(`kifunet quickstart`) or set KIFUNET_RUN")
    return dirs[:1] if newest_only else dirs


def figures_dir(run_dirs: list[str]) -> str:
    out = os.environ.get("KIFUNET_FIGURES") or os.path.join(run_dirs[0], "figures")
    os.makedirs(out, exist_ok=True)
    return out


def sample_sgf() -> str:
    """The first game of the project's sample corpus (the notebooks' default position source)."""
    return str(REPO_ROOT / "samples" / "gnugo" / "gnugo-0000.sgf")


def find_workdir(path: str) -> str:
    """The run directory of ``path``: itself, or the workdir above a ``checkpoints`` or step directory."""
    p = os.path.abspath(path)
    for cand in (p, os.path.dirname(p), os.path.dirname(os.path.dirname(p))):
        if is_run_dir(cand):
            return cand
    raise FileNotFoundError(f"{path}: not a training run directory (no config.json here or above)")


def read_config(workdir: str):
    """The run's resolved config (``config.json``) as an ``ml_collections.ConfigDict``."""
    import json

    import ml_collections

    with open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
        return ml_collections.ConfigDict(json.load(f))


def _data_shape(cfg, dataset: str | None) -> tuple[str, int]:
    """(feature set, board size) from the training dataset's manifest, else from ``dataset``'s."""
    from kifunet.data_prep.reader import load_manifest

    tried = []
    for root in (cfg.get("dataset") or None, dataset):
        if not root:
            continue
        tried.append(root)
        if os.path.isfile(os.path.join(root, "manifest.json")):
            m = load_manifest(root)
            return m["features"]["name"], int(m["board_size"])
    raise FileNotFoundError("cannot tell the run's feature set and board size: no manifest.json in "
                            f"{' or '.join(tried) or 'config.dataset'}; pass the dataset the run was trained on")


def load_run(path: str, *, dataset: str | None = None):
    """A :class:`kifunet.eval.evaluate.Predictor` for a run's newest checkpoint (or the step directory named).

    The model is rebuilt from ``config.json`` exactly as training built it
    (:func:`kifunet.train.train.build_model`) with the feature set and board size of the training dataset
    (``config.dataset``; when that directory is gone, ``dataset``'s manifest is read instead), and the
    parameters and BatchNorm statistics come from the checkpoint (:func:`kifunet.train.checkpointing.load_weights`).
    """
    from flax import nnx

    from kifunet.data_prep import features
    from kifunet.eval.evaluate import Predictor
    from kifunet.train import checkpointing
    from kifunet.train.train import build_model

    workdir = find_workdir(path)
    cfg = read_config(workdir)
    feature_set, board_size = _data_shape(cfg, dataset)
    in_planes = features.get(feature_set).num_planes
    target = path if os.path.abspath(path) != workdir else workdir
    absl_log = logging.getLogger("absl")
    level = absl_log.level
    absl_log.setLevel(logging.ERROR)  # orbax's notes on opening a read-only manager are not news here
    try:
        weights, meta = checkpointing.load_weights(target)
    finally:
        absl_log.setLevel(level)
    model = build_model(cfg, board_size=board_size, in_planes=in_planes)
    graph, params, extra = nnx.split(model, nnx.Param, ...)
    template = {"params": params, "extra": extra}
    want = checkpointing.flatten_state(template)
    missing = [k for k in want if k not in weights]
    bad = [k for k in want if k in weights and tuple(weights[k].shape) != tuple(want[k].shape)]
    if missing or bad:
        raise ValueError(f"{path}: the checkpoint does not fit {cfg.model.name} on {feature_set} "
                         f"(missing {missing[:3]}, shape mismatch {bad[:3]})")
    restored = checkpointing.unflatten_state(template, {k: weights[k] for k in want})
    model = nnx.merge(graph, restored["params"], restored["extra"])
    info = {"name": os.path.basename(workdir), "model": cfg.model.name, "workdir": workdir,
            "checkpoint": os.path.abspath(target), "step": meta.get("step"), "positions": meta.get("positions"),
            "train_seconds": meta.get("train_seconds"), "train_dataset": cfg.get("dataset"),
            "feature_set": feature_set, "board_size": board_size}
    return Predictor(model, feature_set, info=info)
