"""Checkpoints with orbax-checkpoint: training state, data-pipeline position, metadata; atomic, keep N.

Layout: ``WORKDIR/checkpoints/<step>/`` with three items, written by one ``ocp.CheckpointManager``:

* ``state`` (``ocp.args.StandardSave``): the whole training state -- parameters, BatchNorm statistics and
  RNG state (``extra``; PRNG keys stored as their ``key_data``), optimizer state and step -- as a flat dict
  ``{"params/blocks/0/conv/kernel": array, ...}`` (names from the pytree paths, readable with any orbax);
* ``data`` (``grain.checkpoint.CheckpointSave``): each process's input-pipeline state, one JSON file per
  process (``process_<i>-of-<n>.json``), so a resumed run continues with the next batch it would have read;
* ``meta`` (``ocp.args.JsonSave``): step, positions seen, cumulative training seconds, model, config.

Atomicity is orbax's: a step is written under a temporary name and committed by a rename (or a commit file
on object stores), so after a crash -- ``kill -9`` included -- only whole checkpoints are listed; unfinished
temporaries are deleted when the manager opens (``cleanup_tmp_directories``). ``max_to_keep`` keeps the
newest N. No pickle anywhere: arrays go to tensorstore (OCDBT), the rest is JSON.
"""

from __future__ import annotations

import os
from typing import Any

import grain
import jax
import numpy as np
import orbax.checkpoint as ocp

from kifunet.train.parallel import path_tuple

ITEMS = ("state", "data", "meta")


def _key(path) -> str:
    return "/".join(str(p) for p in path_tuple(path) if p != "value")


def flatten_state(tree) -> dict[str, Any]:
    """Training-state pytree -> ``{path: array}`` (PRNG keys as ``key_data``)."""
    out = {}
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        k = _key(path)
        if k in out:
            raise ValueError(f"two state leaves map to the checkpoint name {k!r}")
        out[k] = x
    return out


def unflatten_state(template, flat: dict[str, Any]):
    """Inverse of :func:`flatten_state`, shaped like ``template`` (PRNG keys rewrapped with its impls)."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    out = []
    for path, t in leaves:
        x = flat[_key(path)]
        if isinstance(t, jax.Array) and jax.dtypes.issubdtype(t.dtype, jax.dtypes.prng_key):
            x = jax.random.wrap_key_data(x, impl=jax.random.key_impl(t))
        out.append(x)
    return jax.tree_util.tree_unflatten(treedef, out)


def abstract_flat(template) -> dict[str, jax.ShapeDtypeStruct]:
    """Shapes, dtypes and shardings of :func:`flatten_state` ``(template)`` (the restore target)."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)),
                        flatten_state(template))


class _PipelineState(grain.DatasetIterator):
    """A frozen iterator state handed to grain's checkpoint handler (saving) or filled by it (restoring)."""

    def __init__(self, state: dict | None = None):
        super().__init__()
        self.state = state

    def __next__(self):
        raise StopIteration

    def get_state(self) -> dict:
        return self.state

    def set_state(self, state: dict) -> None:
        self.state = state

    def start_prefetch(self) -> None:
        pass


class Checkpointer:
    """``CheckpointManager`` over ``directory`` with the three items above."""

    def __init__(self, directory: str, *, keep: int = 3, async_save: bool = True):
        self.directory = os.path.abspath(directory)
        options = ocp.CheckpointManagerOptions(max_to_keep=max(1, int(keep)), create=True,
                                               enable_async_checkpointing=async_save,
                                               cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=ITEMS,
            item_handlers={"state": ocp.StandardCheckpointHandler(),
                           "data": grain.checkpoint.CheckpointHandler(),
                           "meta": ocp.JsonCheckpointHandler()})

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def save(self, step: int, state, data_state: dict, meta: dict) -> None:
        args = ocp.args.Composite(state=ocp.args.StandardSave(flatten_state(state)),
                                  data=grain.checkpoint.CheckpointSave(_PipelineState(data_state)),
                                  meta=ocp.args.JsonSave(meta))
        self.manager.save(int(step), args=args, force=True)

    def restore(self, step: int, template) -> tuple[Any, dict, dict]:
        """(state shaped and sharded like ``template``, this process's pipeline state, meta) of ``step``."""
        holder = _PipelineState()
        out = self.manager.restore(int(step), args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_flat(template)),
            data=grain.checkpoint.CheckpointRestore(holder),
            meta=ocp.args.JsonRestore()))
        return unflatten_state(template, out["state"]), holder.state, dict(out["meta"])

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def _restore_as_numpy(state_dir: str) -> dict:
    """Every array of a saved state as a host ``np.ndarray``, whatever devices saved it: a run trained on two JAX
    devices (``cpu_devices=2``, or a GPU) loads in a one-device process (``kifunet gtp``, ``export``), where
    restoring the saved shardings fails with orbax's "topology mismatch"."""
    import jax

    ckptr = ocp.PyTreeCheckpointer()
    meta = ckptr.metadata(state_dir)
    tree = getattr(meta, "item_metadata", meta)  # orbax >= 0.11 wraps the tree
    tree = getattr(tree, "tree", tree)
    args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
    return ckptr.restore(state_dir, args=ocp.args.PyTreeRestore(restore_args=args))


def load_weights(path: str) -> tuple[dict[str, np.ndarray], dict]:
    """``params/...`` and ``extra/...`` arrays of a checkpoint, for ``init_from`` (weights only).

    ``path``: a workdir (its newest checkpoint), a ``checkpoints`` directory, or one step's directory.
    """
    path = os.path.abspath(path)
    if os.path.isdir(os.path.join(path, "checkpoints")):
        path = os.path.join(path, "checkpoints")
    step_dir = path
    if not os.path.isdir(os.path.join(path, "state")):
        mngr = ocp.CheckpointManager(path, item_names=ITEMS,
                                     item_handlers={"state": ocp.StandardCheckpointHandler(),
                                                    "meta": ocp.JsonCheckpointHandler()},
                                     options=ocp.CheckpointManagerOptions(read_only=True))
        step = mngr.latest_step()
        if step is None:
            raise FileNotFoundError(f"{path}: no checkpoint")
        step_dir = str(mngr.directory / str(step))
        mngr.close()
    flat = _restore_as_numpy(os.path.join(step_dir, "state"))
    meta = {}
    meta_path = os.path.join(step_dir, "meta", "metadata")
    if os.path.exists(meta_path):
        import json

        with open(meta_path) as f:
            meta = json.load(f)
    weights = {k: np.asarray(v) for k, v in flat.items() if k.startswith(("params/", "extra/"))}
    return weights, meta
