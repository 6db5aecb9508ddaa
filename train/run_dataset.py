"""The dataset a run trains on, as its checkpoints record it (``dataset``, ``dataset_ids``,
``dataset_history``), and the check that a resume trains on the same one (:func:`check_resume`; the rule:
docs/training.md, Options)."""

from __future__ import annotations

import hashlib
import json
import os

from kifunet.data_prep.errors import UserError
from kifunet.data_prep.fileio import store
from kifunet.train.mixture import split_datasets


class DatasetChanged(UserError, ValueError):
    """A resume names other datasets than the run trained on (one line, naming both)."""


def _norm(spec: str) -> str:
    """A dataset spec's resolved path (``tfds:`` kept as a prefix)."""
    prefix = "tfds:" if spec.startswith("tfds:") else ""
    rest = spec[len(prefix):]
    return prefix + (os.path.realpath(rest) if "@" not in rest else rest)


def identity(spec: str, split: str) -> dict:
    """``{"path": resolved path, "id": "sha256:..." or None}`` of one dataset: ``id`` hashes the shard table (file,
    rows, sha256) of ``split`` in its ``manifest.json``; ``None`` when there is no readable manifest with that split
    (a TFDS dataset)."""
    path = _norm(spec)
    ident = None
    try:
        with open(os.path.join(path, "manifest.json"), encoding="utf-8") as f:
            shards = json.load(f)["splits"][split]["shards"]
        table = [[s["file"], int(s["rows"]), s.get("sha256")] for s in shards]
        ident = "sha256:" + hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return {"path": path, "id": ident}


def identities(dataset: str, split: str) -> list[dict]:
    """:func:`identity` of each dataset of ``config.dataset`` (a mixture: each, in order)."""
    return [identity(r, split) for r in split_datasets(dataset)]


def _differences(saved: str, saved_ids, now: str, now_ids: list[dict]) -> str | None:
    """Why ``now`` is not the run's ``saved`` datasets, or ``None`` when they are the same."""
    a, b = split_datasets(saved), split_datasets(now)
    if len(a) != len(b):
        return f"{len(a)} dataset(s) then, {len(b)} now"
    ids = saved_ids if isinstance(saved_ids, list) and len(saved_ids) == len(a) else [None] * len(a)
    for i, (x, y, was, new) in enumerate(zip(a, b, ids, now_ids)):
        was_id = was.get("id") if isinstance(was, dict) else None
        if was_id and new["id"]:
            if was_id != new["id"]:
                where = "" if len(a) == 1 else f"dataset {i + 1} of the mixture: "
                same_path = (was.get("path") or _norm(x)) == new["path"]
                return where + ("its training split's shards differ (rebuilt since?)" if same_path
                                else "another dataset")
        elif (was.get("path") if isinstance(was, dict) and was.get("path") else _norm(x)) != new["path"]:
            return "another dataset" if len(a) == 1 else f"dataset {i + 1} of the mixture differs"
    return None


def check_resume(config, meta: dict, *, workdir: str, step: int, log=print) -> list[dict]:
    """The ``dataset_history`` to record from ``step`` on, when its checkpoint metadata ``meta`` names the config's
    datasets (same identities, or paths where one is unknown, in the same order); else :class:`DatasetChanged`, unless
    ``config.allow_dataset_change`` (then one line to ``log`` and the change appended)."""
    saved = meta.get("dataset") if isinstance(meta, dict) else None
    history = meta.get("dataset_history") if isinstance(meta, dict) else None
    if not isinstance(history, list) or not history:
        history = [{"step": 0, "dataset": saved if saved else config.dataset}]
    if not saved:  # a checkpoint that records no dataset: nothing to compare
        return history
    now_ids = identities(config.dataset, config.train_split)
    why = _differences(saved, meta.get("dataset_ids"), config.dataset, now_ids)
    if why is None:
        return history
    if not config.get("allow_dataset_change", False):
        raise DatasetChanged(
            f"{workdir} was trained on {saved} (to step {step}); this config names {config.dataset} ({why}): resume "
            f"with --config.dataset={saved}, start a new run with another --workdir (--config.init_from={workdir} "
            f"takes its weights), or pass --config.allow_dataset_change=true to go on with {config.dataset} "
            f"(recorded in the run's dataset_history)")
    log(f"kifunet train: dataset changed at step {step}: {saved} -> {config.dataset} ({why}); "
        f"--config.allow_dataset_change: recorded in config.json and the checkpoints' dataset_history")
    return [*history, {"step": int(step), "dataset": config.dataset}]


def read_meta(step_dir: str) -> dict:
    """A checkpoint step's metadata (``meta/metadata``), ``{}`` when it cannot be read (the step's own check, in
    :mod:`kifunet.train.checkpointing`, reports that)."""
    try:
        with store.open(os.path.join(step_dir, "meta", "metadata"), encoding="utf-8") as f:
            meta = json.load(f)
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


__all__ = ["DatasetChanged", "check_resume", "identities", "identity", "read_meta"]
