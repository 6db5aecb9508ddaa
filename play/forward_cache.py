"""The forward pass of a trained net kept on disk, so that a warm ``kifunet gtp`` start imports JAX only.

:func:`save_entry` writes ``ROOT/KEY/`` atomically (the ``jax.export`` program with a symbolic batch, the
weights, ``meta.json`` with checksums and the net's facts); :func:`load_entry` checks it all and returns an
:class:`ExportedPolicy`, or raises :class:`CacheProblem` (one line), after which the caller loads the net
normally. The key: :func:`entry_key`. ``ROOT``: :func:`cache_root` (``KIFUNET_JAX_CACHE=off``: no cache)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from typing import Callable

import numpy as np

from kifunet.data_prep.fileio import atomic, store
from kifunet.play.policy import Policy, size_range_problem

#: the entry layout's version (part of the key)
FORMAT = "kifunet-forward/1"
#: the files of an entry besides meta.json
PROGRAM, WEIGHTS, META = "forward.bin", "weights.npz", "meta.json"
#: temporary directories older than this (seconds) are left-overs of an interrupted write, removed by the next
STALE_TMP_S = 3600.0


class CacheProblem(Exception):
    """Why a cache entry cannot be used (one line)."""


def cache_root(compile_cache: str | None) -> str | None:
    """The forward-pass cache next to the compilation cache ``compile_cache`` (``.../jax`` ->
    ``.../jax-forward``); None when there is no compilation cache (``KIFUNET_JAX_CACHE=off``)."""
    if not compile_cache:
        return None
    return os.path.normpath(compile_cache) + "-forward"


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _models_source_digest() -> str:
    """sha256 of the source of the model definitions (a changed model never runs a stale program)."""
    import importlib.util

    spec = importlib.util.find_spec("kifunet.models")
    h = hashlib.sha256()
    for folder in spec.submodule_search_locations or ():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    h.update(os.path.relpath(path, folder).encode())
                    with open(path, "rb") as f:
                        h.update(f.read())
    return h.hexdigest()


def entry_key(info: dict) -> str:
    """The sha256 key of the entry for :func:`kifunet.train.nets.describe_net`'s ``info``: the checkpoint
    step's checksums, JAX and jaxlib versions, backend, board size, feature set, the models' source, and
    ``profile`` for a net with a profile input; imports JAX. ``CacheProblem`` when the step has no checksum sidecar."""
    import jax
    import jaxlib

    from kifunet.train.checkpointing import CHECKSUMS

    sidecar = os.path.join(info["step_dir"], CHECKSUMS)
    try:
        with store.open(sidecar, "rb") as f:
            checksums = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise CacheProblem(f"no checksums for {info['step_dir']} ({e.strerror})") from None
    parts = [FORMAT, checksums, jax.__version__, jaxlib.__version__, jax.default_backend(),
             str(int(info["board_size"])), str(info["feature_set"]), _models_source_digest()]
    if info.get("profile_input"):
        parts.append("profile")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


# --- writing ---------------------------------------------------------------------------------------------------
def export_forward(policy: Policy):
    """``(Exported, weights)``: the policy's forward pass ``f(weights, planes[b,N,N,C], rank[b], to_move[b]
    [, profile[b, 46]])`` with a symbolic batch, returning the set :class:`~kifunet.models.forward.Outputs` fields as a
    dict. Needs flax."""
    import jax

    from kifunet.data_prep import profiles
    from kifunet.models.forward import forward as net_forward

    leaves, treedef = jax.tree_util.tree_flatten(policy.net.state)
    graphdef = policy.net.graphdef

    def forward(weights, planes, rank, to_move, *profile):
        out = net_forward(graphdef, jax.tree_util.tree_unflatten(treedef, weights), planes, rank, to_move,
                          profile[0] if profile else None)
        return {k: v for k, v in out._asdict().items() if v is not None}

    (b,) = jax.export.symbolic_shape("b")
    n, c = policy.board_size, policy.fs.num_planes
    specs = ([jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves],
             jax.ShapeDtypeStruct((b, n, n, c), np.float32), jax.ShapeDtypeStruct((b,), np.int32),
             jax.ShapeDtypeStruct((b,), np.int32))
    if policy.reads_profile:
        specs += (jax.ShapeDtypeStruct((b, profiles.SIZE), np.float32),)
    return jax.export.export(jax.jit(forward))(*specs), [np.asarray(x) for x in leaves]


def _remove_stale_tmp(root: str) -> None:
    now = time.time()
    for entry in os.scandir(root):
        try:
            if entry.name.startswith(".tmp-") and now - entry.stat().st_mtime > STALE_TMP_S:
                shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            pass


def save_entry(root: str, info: dict, policy: Policy) -> str:
    """Write the entry of ``policy`` (normally loaded, warmed up) for ``info`` under ``root`` atomically; returns
    its directory. Raises ``OSError`` (read-only or full disk), ``CacheProblem`` (no checksums) or whatever the
    export raises: callers that play go on without a cache."""
    key = entry_key(info)
    exported, weights = export_forward(policy)
    os.makedirs(root, exist_ok=True)
    _remove_stale_tmp(root)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    try:
        with open(os.path.join(tmp, PROGRAM), "wb") as f:
            f.write(exported.serialize())
        np.savez(os.path.join(tmp, WEIGHTS), **{f"w{i:05d}": w for i, w in enumerate(weights)})
        meta = {"format": FORMAT, "key": key, "files": {name: _sha256_file(os.path.join(tmp, name))
                                                        for name in (PROGRAM, WEIGHTS)},
                "weights": len(weights), "board_size": policy.board_size, "feature_set": policy.fs.name,
                "description": policy.description, "trained_size": policy.trained_size,
                "facts": dataclasses.asdict(policy.facts), "profile_input": bool(policy.reads_profile)}
        with open(os.path.join(tmp, META), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        final = os.path.join(root, key)
        if os.path.isdir(final):  # a damaged or older entry under this key
            shutil.rmtree(final, ignore_errors=True)
        try:
            atomic.commit(tmp, final)
        except OSError:
            if not os.path.isfile(os.path.join(final, META)):  # not a concurrent writer that won the race
                raise
        return final
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def try_save(root: str, info: dict, policy: Policy, log: Callable[[str], None] | None = None) -> str | None:
    """:func:`save_entry`, a failure only logged (``log``): a cache that cannot be written must not break play.
    Returns the entry's directory, or None."""
    try:
        where = save_entry(root, info, policy)
    except Exception as e:  # noqa: BLE001
        if log:
            log(f"forward cache: not written: {_one_line(e)}")
        return None
    if log:
        log(f"forward cache: wrote {where}")
    return where


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


# --- reading ---------------------------------------------------------------------------------------------------
def load_entry(root: str, info: dict, rank=None, *, full: Callable[[], Policy],
               profile=None) -> "ExportedPolicy":
    """The cached net for ``info`` as an :class:`ExportedPolicy` (imports JAX, not flax or orbax) with ``rank``
    and ``profile``; ``full`` loads the net normally (for other board sizes). ``CacheProblem`` when the entry
    cannot be used."""
    try:
        key = entry_key(info)
        folder = os.path.join(root, key)
        try:
            with open(os.path.join(folder, META), encoding="utf-8") as f:
                meta = json.load(f)
        except FileNotFoundError:
            raise CacheProblem(f"no entry {folder}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
            raise CacheProblem(f"{folder}: another format or key")
        if (meta.get("board_size"), meta.get("feature_set")) != (int(info["board_size"]), info["feature_set"]):
            raise CacheProblem(f"{folder}: made for another board or feature set")
        if bool(meta.get("profile_input", False)) != bool(info.get("profile_input", False)):
            raise CacheProblem(f"{folder}: made for a net {'with' if meta.get('profile_input') else 'without'} "
                               f"a profile input")
        for name in (PROGRAM, WEIGHTS):
            if _sha256_file(os.path.join(folder, name)) != meta["files"][name]:
                raise CacheProblem(f"{folder}/{name}: checksum differs")
        import jax

        with open(os.path.join(folder, PROGRAM), "rb") as f:
            exported = jax.export.deserialize(bytearray(f.read()))
        with np.load(os.path.join(folder, WEIGHTS), allow_pickle=False) as z:
            weights = [z[f"w{i:05d}"] for i in range(int(meta["weights"]))]
        return ExportedPolicy(exported, weights, meta, rank=rank, full=full, profile=profile)
    except CacheProblem:
        raise
    except Exception as e:  # noqa: BLE001 -- a damaged entry of any kind
        raise CacheProblem(_one_line(e)) from None


class _Full:
    """The normally loaded policy, loaded once on first need and shared by every rank's copy."""

    def __init__(self, load: Callable[[], Policy]):
        self._load, self._policy, self._lock = load, None, threading.Lock()

    def __call__(self) -> Policy:
        with self._lock:
            if self._policy is None:
                self._policy = self._load()
            return self._policy


class _ExportedForward:
    """A deserialized :func:`export_forward` program as a policy's ``net``: ``(planes, rank, to_move, profile) ->``
    :class:`~kifunet.models.forward.Outputs` (``profile`` given only when the program takes one)."""

    def __init__(self, exported, weights, reads_profile: bool):
        import jax

        self.state = jax.device_put(weights)
        self._call = jax.jit(exported.call)
        self._reads_profile = reads_profile

    def __call__(self, planes, rank, to_move, profile=None):
        from kifunet.models.forward import Outputs

        extra = (profile,) if self._reads_profile else ()
        return Outputs(**self._call(self.state, planes, rank, to_move, *extra))


class ExportedPolicy(Policy):
    """:class:`kifunet.play.policy.Policy` whose ``net`` is a deserialized :class:`jax.export.Exported` and whose
    facts are the entry's; the trained board only (another size is the full policy's)."""

    def __init__(self, exported, weights, meta: dict, *, rank=None, full: Callable[[], Policy], profile=None):
        from kifunet.data_prep.planes import features as features_mod
        from kifunet.models.forward import NetFacts
        from kifunet.play.policy import HISTORY_WINDOW, profile_value, rank_value

        self.fs = features_mod.get(meta["feature_set"])
        self.board_size = int(meta["board_size"])
        self.rank = rank_value(rank)
        self.profile = profile_value(profile)
        self.window = HISTORY_WINDOW
        self.description = meta["description"]
        self.trained_size = int(meta["trained_size"])
        self.facts = NetFacts(**meta["facts"])
        self._size_problems = {}
        self.net = _ExportedForward(exported, weights, self.facts.reads_profile)
        self._full = full if isinstance(full, _Full) else _Full(full)

    def full_policy(self) -> Policy:
        """The normally loaded net with this rank and profile (flax, orbax; loaded once)."""
        return self._full().with_rank(self.rank).with_profile(self.profile)

    def size_problem(self, n: int) -> str | None:
        problem = size_range_problem(n)
        if problem or int(n) == self.board_size:
            return problem
        return self._full().size_problem(int(n))

    def resized(self, n: int) -> Policy:
        problem = self.size_problem(n)
        if problem:
            raise ValueError(problem)
        return self if int(n) == self.board_size else self.full_policy().resized(int(n))
