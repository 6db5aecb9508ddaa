"""Checkpoints with orbax-checkpoint: ``WORKDIR/checkpoints/<step>/`` with the items ``state`` (a flat dict,
:func:`flatten_state`), ``data`` (each process's pipeline state) and ``meta`` (JSON); atomic, keep N, verified.

Each committed step gets a sidecar ``kifunet_checksums.json`` (:func:`write_checksums`) that every load checks
first (:func:`verify_step`, :func:`require_loadable`); a step without one is *unsealed*. A damaged step raises
:class:`CheckpointError`; a storage fault while saving is raised once as ``OSError(errno, reason, STEP_DIR)``.
The directory may be a bucket URL. How and why: docs/training.md (How checkpoints are stored and verified)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import fnmatch
import json
import logging
import os
import re
import sys
import threading
from typing import Any, Callable

import numpy as np

from kifunet.data_prep.fileio import atomic, store
from kifunet.data_prep.datasets.verify import file_sha256
from kifunet.data_prep.errors import UserError

# JAX, orbax and grain are imported where they are used, so that verifying a step (verify_step, require_loadable)
# imports none of them: `kifunet gtp` checks the checkpoint before it answers, and loads JAX in the background

ITEMS = ("state", "data", "meta")

#: the sidecar of a step directory: size and sha256 of every other file in it
CHECKSUMS = "kifunet_checksums.json"
CHECKSUMS_FORMAT = "kifunet-checksums/1"
#: the step's JSON files, which must parse even in a step without a sidecar (an unsealed step)
JSON_FILES = ("_CHECKPOINT_METADATA", "meta/metadata", "data/*.json", "state/_METADATA", "state/_sharding",
              "state/array_metadatas/*")
INTACT, DAMAGED, UNSEALED = "intact", "damaged", "unsealed"
#: set to 1 to load unsealed steps (with a warning line) in any command; ``--allow-unsealed`` sets it
ALLOW_UNSEALED_ENV = "KIFUNET_ALLOW_UNSEALED"


def unsealed_allowed(allow: bool | None = None) -> bool:
    """Whether an unsealed step may be loaded: ``allow`` when given, else :data:`ALLOW_UNSEALED_ENV` (set and not
    ``0``)."""
    if allow is not None:
        return bool(allow)
    return os.environ.get(ALLOW_UNSEALED_ENV, "").strip() not in ("", "0")


def _key(path) -> str:
    from kifunet.train.steps import path_tuple

    return "/".join(str(p) for p in path_tuple(path) if p != "value")


def _is_key(x) -> bool:
    """A PRNG key leaf, concrete (``jax.Array``) or abstract (``jax.ShapeDtypeStruct``)."""
    import jax

    return isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _key_impl(t):
    """The PRNG implementation of a key leaf (an abstract one: the registered implementation of its dtype)."""
    import jax

    if isinstance(t, jax.Array):
        return jax.random.key_impl(t)
    for name in ("threefry2x32", "rbg", "unsafe_rbg"):
        if jax.random.key(0, impl=name).dtype == t.dtype:
            return name
    raise ValueError(f"unknown PRNG key type {t.dtype}")


def flatten_state(tree) -> dict[str, Any]:
    """Training-state pytree -> ``{path: array}`` (PRNG keys as ``key_data``). ``tree`` may be abstract (leaves
    ``jax.ShapeDtypeStruct``, e.g. of a model built by ``nnx.eval_shape``): the result is then abstract too, keys
    as the shape of their ``key_data``."""
    import jax

    out = {}
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if _is_key(x):  # a concrete key array, or an abstract one (a model built by nnx.eval_shape)
            x = jax.random.key_data(x) if isinstance(x, jax.Array) else jax.eval_shape(jax.random.key_data, x)
        k = _key(path)
        if k in out:
            raise ValueError(f"two state leaves map to the checkpoint name {k!r}")
        out[k] = x
    return out


def unflatten_state(template, flat: dict[str, Any]):
    """Inverse of :func:`flatten_state`, shaped like ``template`` (PRNG keys rewrapped with its impls); the
    template may be abstract (``jax.ShapeDtypeStruct`` leaves: restoring into a model built by ``nnx.eval_shape``)."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    out = []
    for path, t in leaves:
        x = flat[_key(path)]
        if _is_key(t):
            x = jax.random.wrap_key_data(x, impl=_key_impl(t))
        out.append(x)
    return jax.tree_util.tree_unflatten(treedef, out)


def abstract_flat(template) -> dict:
    """Shapes, dtypes and shardings of :func:`flatten_state` ``(template)`` (the restore target): ``{path:
    jax.ShapeDtypeStruct}``."""
    import jax

    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)),
                        flatten_state(template))


# ------------------------------------------------------------------------------------------------------------
# checksums: written when a step is committed, checked before a step is loaded


class CheckpointError(UserError):
    """A checkpoint step that must not be loaded (damaged), or a run with no step that may. One line, naming the
    step directory, the file, what was expected and found, and the intact steps (the command line prints it as
    ``kifunet CMD: error: MESSAGE``, exit 2)."""


class CheckpointMismatch(CheckpointError, ValueError):
    """An intact checkpoint that does not fit what it is loaded into: other arrays or shapes than the model's, or
    another batch size or process count than a resumed run's. Also a ``ValueError``, for the callers that catch
    one."""


@dataclasses.dataclass(frozen=True)
class StepCheck:
    """One step's verdict (:func:`verify_step`): ``status`` :data:`INTACT`, :data:`DAMAGED` or :data:`UNSEALED`;
    ``reason`` ``''`` or the first problem as one line ``FILE: what`` (then ``(and N more)``); ``files``, ``bytes``:
    what the sidecar covers (0 without one)."""

    step: int | None
    path: str
    status: str
    reason: str = ""
    files: int = 0
    bytes: int = 0

    @property
    def loadable(self) -> bool:
        """Not damaged: intact, or unsealed (loaded only when asked for, or checked and sealed by a resume)."""
        return self.status != DAMAGED


def _step_files(step_dir: str) -> list[str]:
    """Relative paths (``/``-separated, sorted) of the files a sidecar covers: all but the sidecar (and its
    temporary) and dot-files."""
    out = []
    for root, dirs, files in store.walk(step_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            if f.startswith(".") or f.startswith(CHECKSUMS):
                continue
            out.append(store.relpath(os.path.join(root, f), step_dir).replace(os.sep, "/"))
    return sorted(out)


def write_checksums(step_dir: str) -> str:
    """Record size and sha256 of every file of a committed step in ``step_dir/kifunet_checksums.json``
    (atomically); returns its path. Only for a step known to be whole."""
    files = {}
    for rel in _step_files(step_dir):
        path = os.path.join(step_dir, rel)
        files[rel] = {"size": store.getsize(path), "sha256": file_sha256(path)}
    out = os.path.join(step_dir, CHECKSUMS)
    text = json.dumps({"format": CHECKSUMS_FORMAT, "algorithm": "sha256", "files": files}, indent=1, sort_keys=True)
    atomic.write_text_atomic(out, text + "\n", suffix=f".tmp-{os.getpid()}")
    return out


def _step_number(step_dir: str) -> int | None:
    name = os.path.basename(os.path.normpath(step_dir))
    return int(name) if name.isdigit() else None


def _json_problems(step_dir: str) -> list[str]:
    """``FILE: not valid JSON (...)`` for each of the step's JSON files (:data:`JSON_FILES`) that does not parse."""
    out = []
    for rel in _step_files(step_dir):
        if any(fnmatch.fnmatchcase(rel, pat) for pat in JSON_FILES):
            try:
                with store.open(os.path.join(step_dir, rel), encoding="utf-8") as f:
                    json.load(f)
            except (ValueError, UnicodeDecodeError) as e:
                out.append(f"{rel}: not valid JSON ({str(e).splitlines()[0][:80]})")
    return out


def _read_sidecar(step_dir: str) -> dict:
    """The sidecar's ``files`` table; ``ValueError`` (its message says why) when it cannot be used."""
    with store.open(os.path.join(step_dir, CHECKSUMS), encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise ValueError(f"{CHECKSUMS}: not valid JSON ({str(e).splitlines()[0][:80]})") from e
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or doc.get("format") != CHECKSUMS_FORMAT or not all(
            isinstance(v, dict) and isinstance(v.get("size"), int) and isinstance(v.get("sha256"), str)
            for v in files.values()):
        raise ValueError(f"{CHECKSUMS}: not a {CHECKSUMS_FORMAT} table")
    return files


def _file_problems(step_dir: str, files: dict) -> list[str]:
    """Each difference between ``step_dir`` and its sidecar's table, one ``FILE: what`` each; sizes are checked
    before any file is hashed."""
    problems, to_hash = [], []
    for rel, want in sorted(files.items()):
        path = os.path.join(step_dir, rel)
        if not store.isfile(path):
            problems.append(f"{rel}: missing")
        elif (size := store.getsize(path)) != want["size"]:
            problems.append(f"{rel}: size {size:,} bytes, expected {want['size']:,}"
                            f"{' (truncated)' if size < want['size'] else ''}")
        else:
            to_hash.append((rel, path, want["sha256"]))
    problems += [f"{rel}: not in {CHECKSUMS}" for rel in _step_files(step_dir) if rel not in files]
    for rel, path, want in to_hash:
        found = file_sha256(path)
        if found != want:
            problems.append(f"{rel}: sha256 mismatch (expected {want[:12]}, found {found[:12]})")
    return problems


def verify_step(step_dir: str) -> StepCheck:
    """Check one step directory against its sidecar (every file present, of its size and sha256, no other file);
    without a sidecar, :data:`UNSEALED` unless one of its JSON files does not parse (then :data:`DAMAGED`)."""
    step_dir = store.resolve(step_dir)
    step = _step_number(step_dir)
    if not store.isdir(step_dir):
        return StepCheck(step, step_dir, DAMAGED, "not a directory")
    if not store.isfile(os.path.join(step_dir, CHECKSUMS)):
        bad = _json_problems(step_dir)
        if bad:
            return StepCheck(step, step_dir, DAMAGED, _first(bad))
        return StepCheck(step, step_dir, UNSEALED, f"no {CHECKSUMS} (its save was cut short after orbax committed "
                                                   f"it, or it was saved before kifunet checked checkpoints)")
    try:
        files = _read_sidecar(step_dir)
    except ValueError as e:  # (UnicodeDecodeError included)
        return StepCheck(step, step_dir, DAMAGED, str(e))
    problems = _file_problems(step_dir, files)
    size = sum(v["size"] for v in files.values())
    if problems:
        return StepCheck(step, step_dir, DAMAGED, _first(problems), len(files), size)
    return StepCheck(step, step_dir, INTACT, "", len(files), size)


def _first(problems: list[str]) -> str:
    return problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")


def _step_dirs(checkpoints_dir: str) -> list[str]:
    """The committed step directories of a ``checkpoints`` directory (names that are step numbers; orbax's
    unfinished temporaries and steps set aside as damaged are not), oldest first."""
    if not store.isdir(checkpoints_dir):
        return []
    names = [d for d in store.listdir(checkpoints_dir)
             if d.isdigit() and store.isdir(os.path.join(checkpoints_dir, d))]
    return [os.path.join(checkpoints_dir, d) for d in sorted(names, key=int)]


def verify_checkpoints(directory: str) -> list[StepCheck]:
    """``list[StepCheck]`` of every committed step of a run (oldest first; empty when none); ``directory``: a run
    directory, its ``checkpoints`` directory, or one step's directory. ``FileNotFoundError`` when it does not exist."""
    directory = store.resolve(directory)
    if not store.isdir(directory):
        raise FileNotFoundError(2, "No such directory", directory)
    if store.isdir(os.path.join(directory, "checkpoints")):
        directory = os.path.join(directory, "checkpoints")
    if store.isdir(os.path.join(directory, "state")) or store.isfile(os.path.join(directory, CHECKSUMS)):
        return [verify_step(directory)]
    return [verify_step(d) for d in _step_dirs(directory)]


#: the unsealed steps this process has warned about
_WARNED: set[str] = set()


def _warn_unsealed(check: StepCheck, log: Callable[[str], None] | None = None) -> None:
    """One warning line (on stderr, or ``log``) per unsealed step loaded and process."""
    if check.path in _WARNED:
        return
    _WARNED.add(check.path)
    msg = f"warning: {check.path}: {check.reason}: loading it unsealed, unchecked"
    if log is None:
        print(f"kifunet: {msg}", file=sys.stderr, flush=True)
    else:
        log(msg)


def _other_steps(check: StepCheck) -> tuple[str, str]:
    """(``intact steps: 10, 20 (unsealed: 30)``, ``use DIR instead``) for the other steps of ``check``'s run."""
    ck_dir = os.path.dirname(check.path)
    others = [c for c in (verify_step(d) for d in _step_dirs(ck_dir)) if c.path != check.path and c.loadable]
    intact = [c for c in others if c.status == INTACT]
    unsealed = [str(c.step) for c in others if c.status == UNSEALED]
    if others:
        steps = f"intact steps: {', '.join(str(c.step) for c in intact) or 'none'}" + \
                (f" (unsealed: {', '.join(unsealed)})" if unsealed else "")
        return steps, f"use {os.path.join(ck_dir, str((intact or others)[-1].step))} instead"
    return "no intact step in this run", ""


def _damaged_error(check: StepCheck) -> CheckpointError:
    """The one-line error for a damaged step, with the steps of the same run that may be loaded instead."""
    steps, use = _other_steps(check)
    fix = f"{use} (or delete the damaged step)" if use else "train again (or restore the run from a backup)"
    return CheckpointError(f"{check.path}: {check.reason} (damaged); {steps}; {fix}")


def _unsealed_error(check: StepCheck) -> CheckpointError:
    """The one-line refusal of an unsealed step: the intact steps, and the two ways to go on."""
    steps, use = _other_steps(check)
    return CheckpointError(f"{check.path}: {check.reason}: unsealed, so damage in it cannot be told; {steps}; "
                           f"{use + ', or ' if use else ''}resume its training (`kifunet train` on the run checks "
                           f"and seals it), or pass --allow-unsealed ({ALLOW_UNSEALED_ENV}=1) to load it unchecked")


def require_loadable(step_dir: str, *, allow_unsealed: bool | None = None) -> StepCheck:
    """Verify ``step_dir`` before it is loaded (:func:`verify_step`); returns the verdict. :class:`CheckpointError`
    if damaged, or unsealed unless :func:`unsealed_allowed` (``allow_unsealed``, default the environment): then a
    warning line."""
    check = verify_step(step_dir)
    if check.status == DAMAGED:
        raise _damaged_error(check)
    if check.status == UNSEALED:
        if not unsealed_allowed(allow_unsealed):
            raise _unsealed_error(check)
        _warn_unsealed(check)
    return check


class UnsealedStepFailed(CheckpointError):
    """An unsealed step that failed its check when a resume restored it (:meth:`Checkpointer.restore`): it must not
    be sealed. ``check``: its :class:`StepCheck` (status damaged, ``reason`` says what failed)."""

    def __init__(self, check: StepCheck):
        super().__init__(f"{check.path}: {check.reason} (an unsealed step that fails its check)")
        self.check = check


def _restored_problems(flat: dict, step: int, meta: dict, data_state) -> list[str]:
    """What is wrong with an unsealed step's restored contents (:meth:`Checkpointer.restore`): a floating-point
    array with a NaN or an infinity (``state/NAME: 3 non-finite values``), a state or metadata step other than
    the step's own, a pipeline state that is not a JSON object."""
    out = []
    for k, x in flat.items():
        a = np.asarray(x.addressable_data(0) if hasattr(x, "addressable_data") else x)
        if np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating):
            bad = int(a.size - np.count_nonzero(np.isfinite(a)))
            if bad:
                out.append(f"state/{k}: {bad:,} non-finite values")
    if "step" in flat and int(np.asarray(flat["step"].addressable_data(0) if hasattr(flat["step"], "addressable_data")
                                         else flat["step"])) != step:
        out.append(f"state/step: {int(np.asarray(flat['step']))}, not {step}")
    if not isinstance(meta, dict) or meta.get("step") != step:
        out.append(f"meta/metadata: step {meta.get('step') if isinstance(meta, dict) else meta!r}, not {step}")
    if not isinstance(data_state, dict):
        out.append(f"data: pipeline state {type(data_state).__name__}, not a JSON object")
    return out


def _set_aside(step_dir: str) -> str:
    """Rename a damaged step to ``<step>.damaged-<UTC time>`` (a name orbax does not take for a step, nor for
    one of its temporaries): kept for inspection, out of the way of the resumed run's own save of that step."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    base = f"{step_dir}.damaged-{stamp}"
    target, n = base, 1
    while store.exists(target):
        n += 1
        target = f"{base}-{n}"
    store.rename(step_dir, target)
    return target


_OS_ERROR_CODE = re.compile(r"os_error_code='?(\d+)")
#: the faults of the place a save writes to (a subset of :data:`kifunet.errors.FAULT_HINTS`, which the command line
#: prints with what to do)
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def storage_fault(exc: BaseException | None) -> int | None:
    """The errno of a fault of the place written to (:data:`STORAGE_ERRNOS`: a full disk, a read-only file
    system...) anywhere in ``exc``'s chain of causes: an ``OSError``'s own, or the ``os_error_code='N'`` of a
    tensorstore message (orbax's array writes); else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        code = exc.errno if isinstance(exc, OSError) else None
        if code is None:
            m = _OS_ERROR_CODE.search(str(exc))
            code = int(m.group(1)) if m else None
        if code in STORAGE_ERRNOS:
            return code
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def _saving(step_dir: str):
    """Re-raise a storage fault of a save (:func:`storage_fault`) as ``OSError(errno, reason, step_dir)``: reported
    as one line naming the step's directory (``STEP_DIR: No space left on device; free space there, ...``)."""
    try:
        yield
    except Exception as e:
        code = storage_fault(e)
        if code is None:
            raise
        raise OSError(code, os.strerror(code), step_dir) from e


class _QuietStorageFaults(logging.Filter):
    """Drops orbax's log records (with their tracebacks) of a storage fault in its save threads: the same error
    reaches the caller of the save, which reports it in one line (:func:`_saving`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            return storage_fault(exc) is None
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is not ours to drop
            return True
        return storage_fault(ValueError(text)) is None


_QUIET = _QuietStorageFaults()


def _PipelineState(state: dict | None = None):  # noqa: N802 -- stands for the class, defined on first use
    """A frozen iterator state handed to grain's checkpoint handler (saving) or filled by it (restoring)."""
    return _pipeline_state_class()(state)


_PIPELINE_STATE_CLASS = []


def _pipeline_state_class():
    """The ``grain.DatasetIterator`` subclass behind :func:`_PipelineState` (grain imported on first use)."""
    if not _PIPELINE_STATE_CLASS:
        import grain

        class PipelineState(grain.DatasetIterator):
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

        _PIPELINE_STATE_CLASS.append(PipelineState)
    return _PIPELINE_STATE_CLASS[0]


class _Sealer(threading.Thread):
    """Writes one save's sidecar in a background thread once orbax has committed the step (process 0 only); no
    other save starts before :meth:`result`, so ``max_to_keep`` cannot delete the step while it is hashed."""

    def __init__(self, manager, step_dir: str, *, write: bool):
        super().__init__(name="kifunet-checksums", daemon=True)
        self.manager, self.step_dir, self.write = manager, step_dir, write
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.manager.wait_until_finished()
            if self.write and store.isdir(self.step_dir):
                write_checksums(self.step_dir)
        except BaseException as e:  # noqa: BLE001 - handed to the caller of result()
            self.error = e

    def result(self) -> None:
        """Wait for the sidecar; re-raise the save's (or the hashing's) error (a storage fault as one ``OSError``
        naming the step: :func:`_saving`)."""
        self.join()
        if self.error is not None:
            with _saving(self.step_dir):
                raise self.error


class Checkpointer:
    """``CheckpointManager`` over ``directory`` with the three items; every step it saves gets its sidecar once
    committed, every step it restores is verified first."""

    def __init__(self, directory: str, *, keep: int = 3, async_save: bool = True):
        import grain
        import orbax.checkpoint as ocp

        self.directory = store.resolve(directory)
        options = ocp.CheckpointManagerOptions(max_to_keep=max(1, int(keep)), create=True,
                                               enable_async_checkpointing=async_save,
                                               cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=ITEMS,
            item_handlers={"state": ocp.StandardCheckpointHandler(),
                           "data": grain.checkpoint.CheckpointHandler(),
                           "meta": ocp.JsonCheckpointHandler()})
        self._sealer: _Sealer | None = None  # the last save's sidecar writer
        logging.getLogger("absl").addFilter(_QUIET)  # a storage fault is reported once, by the save (_saving)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def step_dir(self, step: int) -> str:
        return os.path.join(self.directory, str(int(step)))

    def save(self, step: int, state, data_state: dict, meta: dict) -> None:
        """Start saving ``step`` (in the background if asynchronous); its sidecar follows in the background once
        orbax has committed it (:class:`_Sealer`). The previous save and its sidecar are finished first (orbax
        waits for the previous save here anyway)."""
        import grain
        import jax
        import orbax.checkpoint as ocp

        self._seal()
        args = ocp.args.Composite(state=ocp.args.StandardSave(flatten_state(state)),
                                  data=grain.checkpoint.CheckpointSave(_PipelineState(data_state)),
                                  meta=ocp.args.JsonSave(meta))
        with _saving(self.step_dir(step)):
            self.manager.save(int(step), args=args, force=True)
        self._sealer = _Sealer(self.manager, self.step_dir(step), write=jax.process_index() == 0)

    def _seal(self) -> None:
        """Wait for the last save and its sidecar; a save that failed raises here (and has no sidecar; a storage
        fault as one ``OSError`` naming the step's directory)."""
        sealer, self._sealer = self._sealer, None
        if sealer is not None:
            sealer.result()
        with _saving(self.directory):
            self.manager.wait_until_finished()

    def newest_intact_step(self, log: Callable[[str], None] = print) -> int | None:
        """The step to resume from: the newest that verifies. Newer damaged steps are set aside (renamed
        ``<step>.damaged-<time>``) and reported to ``log``; an unsealed step is taken and checked by :meth:`restore`.
        ``None``: no checkpoint; :class:`CheckpointError` when every step is damaged (nothing moved then)."""
        damaged, chosen = [], None
        for step in sorted(self.all_steps(), reverse=True):
            check = verify_step(self.step_dir(step))
            if check.loadable:
                chosen = check
                break
            damaged.append(check)
        if damaged and chosen is None:
            listed = "; ".join(f"step {c.step}: {c.reason}" for c in damaged)
            raise CheckpointError(f"{self.directory}: no intact checkpoint ({listed}); start a new run with another "
                                  f"--workdir, or delete {self.directory} to train this one from scratch")
        for check in damaged:
            aside = self._set_aside(check.path)
            log(f"checkpoint step {check.step} is damaged ({check.reason}); set aside as {os.path.basename(aside)}; "
                f"resuming from step {chosen.step}, the newest intact one")
        if damaged:
            self.manager.reload()
        if chosen is not None and chosen.status == UNSEALED:
            log(f"checkpoint step {chosen.step} is unsealed ({chosen.reason}): checking it as it is restored")
        return None if chosen is None else chosen.step

    def _set_aside(self, step_dir: str) -> str:
        """:func:`_set_aside` on process 0, the others wait for it; the new path."""
        import jax
        import orbax.checkpoint as ocp

        if jax.process_count() == 1:
            return _set_aside(step_dir)
        aside = _set_aside(step_dir) if jax.process_index() == 0 else step_dir + ".damaged"
        ocp.multihost.sync_global_processes(f"kifunet_set_aside_{os.path.basename(step_dir)}")
        return aside

    def restore(self, step: int, template, log: Callable[[str], None] = print) -> tuple[Any, dict, dict]:
        """(state shaped and sharded like ``template``, this process's pipeline state, meta) of ``step``, verified
        first (:class:`CheckpointError` if damaged). An unsealed step must match ``template``'s names and shapes
        (else ``ValueError``), read back finite and name ``step``; then process 0 seals it, else
        :class:`UnsealedStepFailed`."""
        import grain
        import orbax.checkpoint as ocp

        step_dir = self.step_dir(step)
        check = verify_step(step_dir)
        if check.status == DAMAGED:
            raise _damaged_error(check)
        full = abstract_flat(template)
        to_flat, to_tree = _optimizer_layout(_saved_shapes(step_dir), full)
        target = _as_saved(full, to_flat, to_tree)
        holder = _PipelineState()
        args = ocp.args.Composite(state=ocp.args.StandardRestore(target),
                                  data=grain.checkpoint.CheckpointRestore(holder), meta=ocp.args.JsonRestore())
        if check.status == INTACT:
            out = self.manager.restore(int(step), args=args)
            state = _as_target(out["state"], to_flat, to_tree, full)
            return unflatten_state(template, state), holder.state, dict(out["meta"])
        _check_saved_shapes(step_dir, target)  # another model: a ValueError, the step left as it is
        try:
            out = self.manager.restore(int(step), args=args)
        except Exception as e:  # noqa: BLE001 - the names and shapes fit: a step that does not read back is damaged
            why = " ".join(str(e).split())[:160]
            raise UnsealedStepFailed(dataclasses.replace(check, status=DAMAGED, reason=f"does not read back "
                                                         f"({type(e).__name__}: {why})")) from e
        meta = dict(out["meta"]) if isinstance(out["meta"], dict) else out["meta"]
        problems = _restored_problems(out["state"], int(step), meta, holder.state)
        if problems:
            raise UnsealedStepFailed(dataclasses.replace(check, status=DAMAGED, reason=_first(problems)))
        import jax

        if jax.process_index() == 0:
            write_checksums(step_dir)
        log(f"checkpoint step {step} had no {CHECKSUMS}: restored and checked (this model's shapes, every array "
            f"finite, step {step} in its state and metadata); sealed now")
        return unflatten_state(template, _as_target(out["state"], to_flat, to_tree, full)), holder.state, meta

    def set_aside_failed(self, error: UnsealedStepFailed, log: Callable[[str], None] = print) -> int | None:
        """Set aside an unsealed step that failed its check (:meth:`restore`), say so in one line, and return the
        step to resume from instead (:meth:`newest_intact_step`); :class:`CheckpointError` when none is left."""
        check = error.check
        aside = self._set_aside(check.path)
        self.manager.reload()
        try:
            step = self.newest_intact_step(log) if self.all_steps() else None
        except CheckpointError:
            step = None
        if step is None:
            raise CheckpointError(f"{check.path}: unsealed and fails its check ({check.reason}); set aside as "
                                  f"{os.path.basename(aside)}; no other checkpoint in {self.directory}: rerun to "
                                  f"train from scratch, or start a new run with another --workdir")
        log(f"checkpoint step {check.step} is unsealed and fails its check ({check.reason}); set aside as "
            f"{os.path.basename(aside)}; resuming from step {step}")
        return step

    def wait(self) -> None:
        """Wait for the last save to finish and record its checksums."""
        self._seal()

    def close(self) -> None:
        """Finish the last save and its sidecar, then close the manager. The first error is the one raised (a
        failed save's storage fault as one ``OSError`` naming its step: orbax raises it once more on closing)."""
        first: BaseException | None = None
        try:
            self._seal()
        except BaseException as e:  # noqa: BLE001 - raised below, after the manager is closed
            first = e
        try:
            # orbax starts the clean-up of unfinished temporaries in a thread when the manager opens and awaits it
            # only in its next save; ``manager.close()`` does not. A run that ends before its first save would then
            # remove its empty checkpoints folder under that thread (a traceback on stderr): await it here.
            await_cleanup = getattr(self.manager, "_maybe_await_cleanup_tmp_directory", None)
            try:
                if await_cleanup is not None:
                    await_cleanup()
            finally:
                with _saving(self.directory):
                    self.manager.close()
        except Exception:
            if first is None:
                raise
        finally:
            logging.getLogger("absl").removeFilter(_QUIET)
        if first is not None:
            raise first


def _saved_shapes(step_dir: str) -> dict[str, tuple]:
    """``{name: shape}`` of a step's saved state arrays (orbax's metadata)."""
    import orbax.checkpoint as ocp

    meta = ocp.StandardCheckpointer().metadata(os.path.join(step_dir, "state"))
    tree = getattr(meta, "item_metadata", meta)
    tree = getattr(tree, "tree", tree)
    return {k: tuple(getattr(v, "shape", ()) or ()) for k, v in dict(tree).items()}


def _optimizer_layout(saved: dict, target: dict) -> tuple[dict, dict]:
    """``(to_flat, to_tree)``: ``{slot: [per-parameter names in optax.flatten's order]}`` for the optimizer slots
    ``target`` holds flat while the step (``saved``: ``{name: shape}``) holds them per parameter, and the reverse."""
    params = [k[len("params/"):] for k in target if k.startswith("params/")]
    size = sum(int(np.prod(target[f"params/{p}"].shape)) for p in params)
    to_flat, to_tree = {}, {}
    for k in {k for k in (*target, *saved) if k.startswith("opt_state/")}:
        names = [f"{k}/{p}" for p in params]
        per_param = [target[f"params/{p}"].shape for p in params]
        if k in target and k not in saved and tuple(target[k].shape) == (size,):
            if [saved.get(n) for n in names] == [tuple(x) for x in per_param]:
                to_flat[k] = names
        elif k in saved and k not in target and tuple(saved[k]) == (size,):
            if all(n in target and tuple(target[n].shape) == tuple(x) for n, x in zip(names, per_param)):
                to_tree[k] = names
    return to_flat, to_tree


def _as_saved(target: dict, to_flat: dict, to_tree: dict) -> dict:
    """``target`` in the step's optimizer layout (:func:`_optimizer_layout`): what the step restores into."""
    import jax

    out = {k: v for k, v in target.items() if k not in to_flat and not any(k in n for n in to_tree.values())}
    for k, names in to_flat.items():
        for n in names:
            out[n] = target["params/" + n[len(k) + 1:]]
    for k, names in to_tree.items():
        first = target[names[0]]
        size = sum(int(np.prod(target[n].shape)) for n in names)
        out[k] = jax.ShapeDtypeStruct((size,), first.dtype, sharding=first.sharding)
    return out


def _as_target(state: dict, to_flat: dict, to_tree: dict, target: dict) -> dict:
    """A restored ``state`` in ``target``'s optimizer layout: per-parameter arrays concatenated in
    :func:`optax.flatten`'s order, or a vector cut into them; placed as ``target`` places them."""
    if not to_flat and not to_tree:
        return state
    import jax
    import jax.numpy as jnp

    def placed(k, x):
        return x if target[k].sharding is None else jax.device_put(x, target[k].sharding)

    parts = {n for names in to_flat.values() for n in names}
    out = {k: v for k, v in state.items() if k not in parts and k not in to_tree}
    for k, names in to_flat.items():
        out[k] = placed(k, jnp.concatenate([jnp.ravel(state[n]) for n in names]))
    for k, names in to_tree.items():
        start = 0
        for n in names:
            stop = start + int(np.prod(target[n].shape))
            out[n] = placed(n, jnp.reshape(state[k][start:stop], target[n].shape))
            start = stop
    return out


def _check_saved_shapes(step_dir: str, target: dict) -> None:
    """``ValueError`` unless the step's saved arrays (orbax's metadata) are ``target``'s names and shapes."""
    saved = _saved_shapes(step_dir)
    want = {k: tuple(v.shape) for k, v in target.items()}
    missing, unexpected = sorted(set(want) - set(saved)), sorted(set(saved) - set(want))
    other = sorted(k for k in set(want) & set(saved) if saved[k] != want[k])
    if missing or unexpected or other:
        raise CheckpointMismatch(f"saved arrays differ from this model's: missing {missing[:3]}, unexpected "
                                 f"{unexpected[:3]}, "
                         f"other shapes {[(k, saved[k], want[k]) for k in other[:3]]}")


def _restore_as_numpy(state_dir: str, *, allow_unsealed: bool | None = None) -> dict:
    """Every array of a saved state as a host ``np.ndarray``, whatever devices saved it; the step is verified
    first (:func:`require_loadable`)."""
    import jax
    import orbax.checkpoint as ocp

    require_loadable(os.path.dirname(store.resolve(state_dir)), allow_unsealed=allow_unsealed)
    ckptr = ocp.PyTreeCheckpointer()
    meta = ckptr.metadata(state_dir)
    tree = getattr(meta, "item_metadata", meta)  # orbax >= 0.11 wraps the tree
    tree = getattr(tree, "tree", tree)
    args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
    return ckptr.restore(state_dir, args=ocp.args.PyTreeRestore(restore_args=args))


def load_weights(path: str, *, allow_unsealed: bool | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """``params/...`` and ``extra/...`` arrays of a checkpoint (``path``: a workdir, its ``checkpoints`` directory,
    or one step's directory), for ``init_from``; verified first (:func:`require_loadable`)."""
    import orbax.checkpoint as ocp

    path = store.resolve(path)
    if store.isdir(os.path.join(path, "checkpoints")):
        path = os.path.join(path, "checkpoints")
    step_dir = path
    if not any(store.exists(os.path.join(path, f)) for f in ("state", CHECKSUMS)):  # not a step: its newest
        mngr = ocp.CheckpointManager(path, item_names=ITEMS,
                                     item_handlers={"state": ocp.StandardCheckpointHandler(),
                                                    "meta": ocp.JsonCheckpointHandler()},
                                     options=ocp.CheckpointManagerOptions(read_only=True))
        step = mngr.latest_step()
        if step is None:
            raise FileNotFoundError(f"{path}: no checkpoint")
        step_dir = str(mngr.directory / str(step))
        mngr.close()
    flat = _restore_as_numpy(os.path.join(step_dir, "state"), allow_unsealed=allow_unsealed)
    meta = {}
    meta_path = os.path.join(step_dir, "meta", "metadata")
    if store.exists(meta_path):
        with store.open(meta_path) as f:
            meta = json.load(f)
    weights = {k: np.asarray(v) for k, v in flat.items() if k.startswith(("params/", "extra/"))}
    return weights, meta
