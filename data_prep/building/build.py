"""``kifunet build``: SGF inputs -> filtered, encoded, shuffled, sharded HDF5 with a manifest.

The command's orchestration: the options (:class:`BuildConfig`), the output directory's fingerprint and lock, the
disk space check, and :func:`build`, which runs the encode, plan, write and finish stages. A rerun of the same
command resumes and gives byte-identical files; a rerun with other options is refused unless ``overwrite``. The
stages, resume, lock and space rules: docs/building.md ("Output, resuming, verification and space").
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import errno
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kifunet.data_prep.fileio import atomic

from . import build_lock, build_space
from ..errors import InvalidValue, UserError, naming
from ..sgf import inputs as inputs_mod
from ..datasets import shards as shards_mod
from .encode_stage import SPILL_VERSION, UNIT_GAMES, encode_inputs, sample_kept, spill_row_bytes, unit_config
from .filters import Filters
from ..datasets.manifest import BASE_COLUMNS, FORMAT_VERSION, MANIFEST, REJECTS, hash_json, tool_version
from ..datasets.manifest import manifest as make_manifest
from ..datasets.manifest import write_manifest
from .plan_stage import plan, shard_tasks
from ..datasets.shards import Storage
from .splits import SplitRule
from .worker_pool import WorkerPool
from .write_stage import write_shards

WORK = ".work"
LOCK = ".lock"  # DIR/.lock: the build lock, outside WORK (which --overwrite clears)
INPUT_HASHES = "input_sha256.json"  # in WORK: {path: sha256} of every input file as the build began
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)  # DIR cannot be written: no lock, only a finished build
SYMMETRY_MODES = ("none", "all")

if TYPE_CHECKING:
    from ..planes.features import FeatureSet


@dataclasses.dataclass
class BuildConfig:
    """The options of one build. ``features``: a feature set's name (``kifunet build --features``) or the
    :class:`~kifunet.data_prep.planes.features.FeatureSet`; looked up here, once, and passed on as the object."""

    inputs: list[str]
    out: str
    features: FeatureSet | str = "maddison"
    filters: Filters = dataclasses.field(default_factory=Filters)
    splits: SplitRule = dataclasses.field(default_factory=SplitRule)
    seed: int = 0
    storage: Storage = dataclasses.field(default_factory=Storage)
    shard_rows: int = 65536
    unit_games: int = UNIT_GAMES
    symmetries: str = "none"
    targets: bool = True  # False: no ownership targets (every game's source ``none``; ``kifunet build --no-targets``)
    workers: int = 0  # 0: run in this process (no crash isolation); N >= 1: N worker processes
    preset: str | None = None
    source: str | None = None  # the declared source (one of profiles.SOURCES) of every game; None: each record's
    options: dict = dataclasses.field(default_factory=dict)  # resolved options, recorded in the manifest
    overwrite: bool = False
    keep_work: bool = False
    space_check: bool = True  # refuse to start when the estimated space exceeds the free space
    progress: bool | None = None  # None: a progress bar when stderr is a terminal

    def __post_init__(self):
        if isinstance(self.features, str):
            from ..planes import features

            self.features = features.get(self.features)  # KeyError naming the known sets
        if self.features.num_stored == 0:
            raise InvalidValue(f"feature set {self.features.name} has only constant planes, made at load time: build "
                             f"with a set that stores planes and add it when training "
                             f"(--config.input.add_planes={self.features.name})")
        if self.source is not None:
            from ..profiles import SOURCES

            if self.source not in SOURCES:
                raise InvalidValue(f"source {self.source!r}: one of {', '.join(SOURCES)}")
        if self.symmetries not in SYMMETRY_MODES:
            raise InvalidValue(f"symmetries must be one of {SYMMETRY_MODES}")
        if self.shard_rows < 1 or self.unit_games < 1:
            raise InvalidValue("shard_rows and unit_games must be positive")

    def fingerprint(self) -> dict:
        """Everything the output depends on (not workers, progress, keep_work or space_check)."""
        fs = self.features
        return {
            "tool_version": tool_version(),
            "format_version": FORMAT_VERSION,
            "spill_version": SPILL_VERSION,
            "inputs": inputs_mod.input_identity(self.inputs),
            "features": {"name": fs.name, "version": fs.version},
            "filters": self.filters.to_json(),
            "splits": self.splits.to_json(),
            "seed": self.seed,
            "storage": self.storage.to_json(),
            "shard_rows": self.shard_rows,
            "unit_games": self.unit_games,
            "symmetries": self.symmetries,
            "source": self.source,
            **({} if self.targets else {"targets": False}),  # absent when on: older builds' fingerprints hold
        }


class BuildError(UserError):
    """The build cannot start (output directory in use or holding another dataset, bad options)."""


def _check_features(fs) -> None:
    missing = [c for c in fs.columns if c not in BASE_COLUMNS]
    if missing:
        raise BuildError(f"feature set {fs.name} needs per-row columns {missing} that the build does not write")


def _make_out(out: str) -> None:
    """Create the output directory; ``NotADirectoryError`` naming ``out`` if a file is there."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), out)
    os.makedirs(out, exist_ok=True)


def _touched_only(old: dict, new: dict) -> list[str]:
    """The input files whose mtime alone differs between two fingerprints otherwise equal (same options, the same
    files in the same order with the same sizes); [] when anything else differs."""
    if {k: v for k, v in old.items() if k != "inputs"} != {k: v for k, v in new.items() if k != "inputs"}:
        return []
    a, b = old.get("inputs") or [], new.get("inputs") or []
    if len(a) != len(b) or any((x.get("path"), x.get("size")) != (y["path"], y["size"]) for x, y in zip(a, b)):
        return []
    return [y["path"] for x, y in zip(a, b) if x.get("mtime_ns") != y["mtime_ns"]]


def _same_content(work: str, paths: list[str]) -> bool:
    """Whether every file of ``paths`` still has the sha256 recorded in ``work/INPUT_HASHES`` as the build began."""
    try:
        with open(os.path.join(work, INPUT_HASHES), encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        return False  # a build begun before the hashes were recorded, or a damaged record: refuse as before
    now = inputs_mod.content_hashes([{"path": p} for p in paths])
    return all(recorded.get(p) is not None and recorded.get(p) == now[p] for p in paths)


def _prepare_out(cfg: BuildConfig, fingerprint: dict, log: Callable[[str], None] = print) -> str | None:
    """Check DIR against the fingerprint. Returns 'done' if an identical dataset is complete there."""
    out, work = cfg.out, os.path.join(cfg.out, WORK)
    fp_path = os.path.join(work, "fingerprint.json")
    man_path = os.path.join(out, MANIFEST)
    fp_hash = hash_json(fingerprint)
    if os.path.isdir(out) and set(os.listdir(out)) - {LOCK}:
        if os.path.exists(man_path):
            with open(man_path, encoding="utf-8") as f:
                old = json.load(f).get("fingerprint")
            if old == fp_hash and not cfg.overwrite and not os.path.isdir(work):
                return "done"
        elif not os.path.isdir(work) and not cfg.overwrite:
            raise BuildError(f"{out} is not empty and holds no kifunet build; pick another --out or --overwrite")
        if os.path.exists(fp_path) and not cfg.overwrite:
            with open(fp_path, encoding="utf-8") as f:
                old_fp = json.load(f)
            if hash_json(old_fp) != fp_hash:
                changed = sorted(k for k in set(old_fp) | set(fingerprint) if old_fp.get(k) != fingerprint.get(k))
                touched = _touched_only(old_fp, fingerprint)
                if touched and _same_content(work, touched):
                    log(f"{out}: {len(touched)} input file(s) have a new mtime since the build began but the same "
                        "sha256; resuming")
                    atomic.write_json_atomic(fp_path, fingerprint)
                    return None
                if "spill_version" in changed:  # its work units hold what this kifunet cannot reuse
                    raise BuildError(f"{out} holds an unfinished build started by another kifunet version, whose "
                                     "work units cannot be reused; pass --overwrite to start over")
                raise BuildError(f"{out} holds an unfinished build with other settings ({', '.join(changed)} "
                                 "differ); rerun the same command to resume it, or pass --overwrite")
        elif os.path.exists(man_path) and not cfg.overwrite:
            raise BuildError(f"{out} holds a different dataset (manifest.json); pass --overwrite to replace it")
        if cfg.overwrite:
            _clear_out(out)
    return None


def _clear_out(out: str) -> None:
    """Remove what a previous build wrote (only kifunet's own files)."""
    for name in os.listdir(out):
        p = os.path.join(out, name)
        if name == LOCK:  # held by this build
            continue
        if name in (MANIFEST, REJECTS, WORK) or name.endswith(".tmp"):
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        elif os.path.isdir(p) and os.path.exists(os.path.join(p, "games.h5")) or (
                os.path.isdir(p) and any(f.startswith("shard-") for f in os.listdir(p))):
            shutil.rmtree(p)
        else:
            raise BuildError(f"{out} holds {name!r}, which kifunet did not write; not overwriting")


def build(cfg: BuildConfig, log: Callable[[str], None] | None = None, timings: dict | None = None) -> dict:
    """Run (or resume) a build. Returns the manifest; ``timings`` (if given) receives seconds per stage."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    t0 = time.time()
    fs = cfg.features
    _check_features(fs)
    fingerprint = cfg.fingerprint()
    _make_out(cfg.out)
    try:
        lock = build_lock.acquire(cfg.out, LOCK, "kifunet build", names=cfg.out)
    except OSError as e:  # a read-only DIR: fine if it holds this very dataset, finished (nothing to write)
        if e.errno not in READ_ONLY or cfg.overwrite or _prepare_out(cfg, fingerprint) != "done":
            raise
        return _finished(cfg, log)
    try:
        with naming(cfg.out):  # a write to an open file names none: name DIR
            return _build_locked(cfg, fs, fingerprint, log, timings, t0)
    finally:
        build_lock.release(cfg.out, LOCK, lock)


def _kept_share(cfg: BuildConfig, step: int, pool: WorkerPool | None, log: Callable[[str], None]) -> float | None:
    """:func:`kifunet.data_prep.building.encode_stage.sample_kept`, in a worker when there are workers (loading a record
    could crash the process; the build's crash isolation covers the sample too); None if it crashed one."""
    args = (cfg.inputs, step, cfg.filters, cfg.splits)
    if pool is None:
        kept, total = sample_kept(*args)
    else:
        try:
            kept, total = pool.submit(sample_kept, *args).result()
        except cf.process.BrokenProcessPool:
            pool.restart()
            log("spill: a sampled record crashed its worker; the estimate counts every move as kept")
            return None
    return kept / total if total else 1.0


def _check_space(cfg: BuildConfig, fs, work: str, pool: WorkerPool | None, log: Callable[[str], None]) -> int | None:
    """Print the estimated space (:mod:`kifunet.data_prep.building.build_space`); ``BuildError`` if the disk has less.
    Returns the inputs' record count (the encode stage's progress total), or None when not checked."""
    if not cfg.space_check:
        return None
    per_record = build_space.count_moves(cfg.inputs)
    step = build_space.sample_step(len(per_record))
    seen = build_space.Scan(records=len(per_record), moves=sum(per_record),
                            kept=_kept_share(cfg, step, pool, log), sampled=len(per_record[::step]))
    est = build_space.estimate(cfg, fs, seen, spill_row_bytes(cfg.filters.board_size, fs.num_stored))
    free = build_space.free_bytes(cfg.out)
    log(build_space.summary(est, cfg.out, work, free))
    why = build_space.shortfall(est, cfg.out, free)
    if why is not None:
        raise BuildError(why)
    return seen.records


def _finished(cfg: BuildConfig, log: Callable[[str], None]) -> dict:
    """The manifest of the dataset already built in DIR with these settings."""
    log(f"{cfg.out}: already built with these settings (manifest.json); nothing to do")
    with open(os.path.join(cfg.out, MANIFEST), encoding="utf-8") as f:
        return json.load(f)


def _build_locked(cfg: BuildConfig, fs, fingerprint: dict, log, timings, t0: float) -> dict:
    """:func:`build` once the lock is held."""
    if _prepare_out(cfg, fingerprint, log) == "done":
        return _finished(cfg, log)
    work = os.path.join(cfg.out, WORK)
    pool = WorkerPool(cfg.workers) if cfg.workers >= 1 else None
    try:
        records = _check_space(cfg, fs, work, pool, log)
        os.makedirs(work, exist_ok=True)
        fp_path = os.path.join(work, "fingerprint.json")
        if not os.path.exists(fp_path):  # the hashes first: a fingerprint without them is never resumed touched
            atomic.write_json_atomic(os.path.join(work, INPUT_HASHES),
                                         inputs_mod.content_hashes(fingerprint["inputs"]))
            atomic.write_json_atomic(fp_path, fingerprint)
        split_names = cfg.splits.names()
        ucfg = unit_config(cfg.features, cfg.filters, cfg.splits, cfg.symmetries, cfg.source, cfg.targets)
        infos: list = []
        summaries = encode_inputs(cfg.inputs, ucfg, work, infos, unit_games=cfg.unit_games, pool=pool,
                                  progress=cfg.progress, log=log, total=records)
        t_encode = time.time()
        per_split, accounting = plan(work, summaries, split_names, infos, dedupe=cfg.filters.dedupe)
        tasks = []
        for split in split_names:
            os.makedirs(os.path.join(cfg.out, split), exist_ok=True)
            for t in shard_tasks(cfg, work, split, per_split[split], fs):
                tasks.append(t)
        # stale temporaries from an interrupted run
        for split in split_names:
            d = os.path.join(cfg.out, split)
            for name in os.listdir(d):
                if name.endswith(".tmp"):
                    os.remove(os.path.join(d, name))
        t_plan = time.time()
        results = write_shards(tasks, pool=pool, progress=cfg.progress)
        t_write = time.time()
        for split in split_names:
            sp = per_split[split]
            path = os.path.join(cfg.out, split, "games.h5")
            build_space.ensure_free(path, build_space.GAME_BYTES * len(sp["games"]))
            shards_mod.write_games_table(path, sp["games"], attrs={"split": split}, board_size=cfg.filters.board_size)
        manifest = make_manifest(cfg, fs, fingerprint, infos, accounting, per_split, split_names, results, tasks)
        atomic.commit(os.path.join(work, "rejects.jsonl.part"), os.path.join(cfg.out, REJECTS))
        write_manifest(cfg.out, manifest)
    finally:
        if pool is not None:
            pool.close()
    if not cfg.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    t_end = time.time()
    stage = {"encode": t_encode - t0, "plan": t_plan - t_encode, "write": t_write - t_plan,
             "finish": t_end - t_write, "total": t_end - t0}
    if timings is not None:
        timings.update(stage)
    log(f"built {cfg.out} in {stage['total']:.1f} s (encode {stage['encode']:.1f} s, plan {stage['plan']:.1f} s, "
        f"write {stage['write']:.1f} s): {accounting['seen']} records seen, "
        f"{accounting['used']} used, {sum(accounting['filtered'].values())} filtered, "
        f"{sum(accounting['rejected'].values())} rejected; "
        + ", ".join(f"{s}: {per_split[s]['positions']} positions" for s in split_names))
    return manifest
