"""``kifunet build``: SGF inputs -> filtered, encoded, shuffled, sharded HDF5 with a manifest.

Pipeline (every stage deterministic; see the README section "Building a dataset"):

1. **Encode** (parallel). The game records of the inputs (:mod:`kifunet.data_prep.inputs`, in input order)
   are cut into fixed *work units* of ``unit_games`` records. A worker process loads each record
   (:func:`kifunet.data_prep.sgf_io.load_game`), applies the game filters and the split rule, replays it
   (:func:`kifunet.data_prep.replay.encode_game`; an illegal move rejects the whole game, reason
   ``illegal_move:<why>``, naming the move), applies the move filters and appends the kept positions (each
   point's planes packed into bytes) to the unit's spill files in ``DIR/.work/units/unit-NNNNN/`` (written
   to a temporary name, then renamed). A unit's output depends only on its records and the options, never
   on the worker or timing.
2. **Plan** (main process). Units are read in order: duplicates (same moves; the first copy that passed every
   filter wins) are dropped, each split gets its games table, and the split's positions are put in a random
   order drawn from ``seed`` (a full permutation of all the split's positions: shuffled across games and
   across shards) and cut into shards of at most ``shard_rows`` rows (sizes differ by at most one).
3. **Write** (parallel). Each shard gathers its rows from the spill files (memory-mapped one unit at a time,
   so a worker holds one shard's rows, about 100 MB for 65,536 maddison rows, whatever the dataset size) and
   is written to ``shard-NNNNN.h5.tmp``, then renamed.
4. **Finish**: ``games.h5`` per split, ``rejects.jsonl`` (one line per game not used, and per damaged
   input), ``manifest.json`` (atomic), then ``.work`` is removed.

**Resume.** Rerunning the same command on the same ``DIR`` after a crash or ``kill -9`` reuses every finished
unit and shard (their files exist only once complete) and redoes the rest; the result is byte-identical to an
uninterrupted build. ``DIR/.work/fingerprint.json`` records the options and the inputs' sizes and mtimes;
a rerun with different options or changed inputs is refused (``--overwrite`` starts over).

**Crashes.** If a worker process dies (a crash in compiled code), the units it had in flight are rerun one
at a time in *isolation* mode, which notes the record in progress before each one: a record that kills the
worker again is rejected (``worker_crash``) and its unit finishes without it.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import fcntl
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

from . import inputs as inputs_mod
from . import shards as shards_mod
from .errors import IllegalMoveError, KifunetInputError
from .filters import MOVE_REASONS, Filters
from .shards import Storage
from .splits import SplitRule

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"
WORK = ".work"
FORMAT = "kifunet-dataset"
FORMAT_VERSION = 1
ILLEGAL_MOVE_POLICY = ("a game with an illegal move (occupied point, suicide, simple-ko retake) is rejected "
                       "whole: reason 'illegal_move:<why>', the move named in rejects.jsonl")
SYMMETRY_MODES = ("none", "all")

# Per-row columns of every dataset (see kifunet.data_prep.shards). The feature set's constant planes must be
# made from these.
BASE_COLUMNS = ("target", "to_move", "move_number", "player_rank", "opponent_rank", "game_index")
_SPILL_DTYPE = np.dtype([("target", np.int16), ("to_move", np.int8), ("move_number", np.int16),
                         ("player_rank", np.int8), ("opponent_rank", np.int8), ("game", np.int32),
                         ("symmetry", np.int8)])


def tool_version() -> str:
    from kifunet import __version__

    return __version__


@dataclasses.dataclass
class BuildConfig:
    inputs: list[str]
    out: str
    features: str = "maddison"
    filters: Filters = dataclasses.field(default_factory=Filters)
    splits: SplitRule = dataclasses.field(default_factory=SplitRule)
    seed: int = 0
    storage: Storage = dataclasses.field(default_factory=Storage)
    shard_rows: int = 65536
    unit_games: int = 256
    symmetries: str = "none"
    workers: int = 0  # 0: run in this process (no crash isolation); N >= 1: N worker processes
    preset: str | None = None
    options: dict = dataclasses.field(default_factory=dict)  # resolved options, recorded in the manifest
    overwrite: bool = False
    keep_work: bool = False
    progress: bool | None = None  # None: a progress bar when stderr is a terminal

    def __post_init__(self):
        if self.symmetries not in SYMMETRY_MODES:
            raise ValueError(f"symmetries must be one of {SYMMETRY_MODES}")
        if self.shard_rows < 1 or self.unit_games < 1:
            raise ValueError("shard_rows and unit_games must be positive")

    def fingerprint(self) -> dict:
        """Everything the output depends on (not workers, progress or keep_work)."""
        from . import features

        fs = features.get(self.features)
        return {
            "tool_version": tool_version(),
            "format_version": FORMAT_VERSION,
            "inputs": inputs_mod.input_identity(self.inputs),
            "features": {"name": fs.name, "version": fs.version},
            "filters": self.filters.to_json(),
            "splits": self.splits.to_json(),
            "seed": self.seed,
            "storage": self.storage.to_json(),
            "shard_rows": self.shard_rows,
            "unit_games": self.unit_games,
            "symmetries": self.symmetries,
        }


class BuildError(Exception):
    """The build cannot start (output directory in use or holding another dataset, bad options)."""


# ------------------------------------------------------------------------------------------------------------
# stage 1: encode one work unit (runs in a worker process)

def _unit_dir(work: str, u: int) -> str:
    return os.path.join(work, "units", f"unit-{u:05d}")


def _game_meta(rec) -> dict:
    i = rec.info
    return {"black": i.black, "white": i.white, "black_rank": int(i.black_rank), "white_rank": int(i.white_rank),
            "black_rank_text": i.black_rank_text, "white_rank_text": i.white_rank_text,
            "komi": i.komi, "handicap": int(i.handicap or 0), "result": i.result, "date": i.date,
            "year": i.year, "rules": i.rules, "size": int(rec.size), "content_hash": i.content_hash,
            "num_moves": int(rec.num_moves)}


def _encode_one(src, fs, filt: Filters, rule: SplitRule, symmetries: str):
    """(game dict, planes uint8[R, N, N, Cs] | None, spill columns | None) for one record."""
    from . import replay, sgf_io

    g = {"path": src.path}
    if src.error is not None:
        g.update(status="rejected", reason=src.error, detail=src.detail)
        return g, None, None
    try:
        rec = sgf_io.load_game(src.data, path=src.path)
    except KifunetInputError as e:
        g.update(status="rejected", reason=e.reason, detail=str(e))
        return g, None, None
    except Exception as e:  # noqa: BLE001 - a bug on one record must not stop the build
        g.update(status="rejected", reason="internal_error", detail=f"load: {type(e).__name__}: {e}")
        return g, None, None
    g.update(_game_meta(rec))
    g["moves_hash"] = rec.moves_hash()
    reason = filt.game_reason(rec)
    split = None
    if reason is None:
        split, reason = rule.assign(rec.info, g["moves_hash"])
    if reason is not None:
        g.update(status="filtered", reason=reason)
        return g, None, None
    g["split"] = split
    try:
        enc = replay.encode_game(rec, fs, path=src.path)
    except IllegalMoveError as e:
        g.update(status="rejected", reason=e.reason, detail=str(e), move_number=e.move_number, move=e.move,
                 colour=e.colour)
        return g, None, None
    except KifunetInputError as e:
        g.update(status="rejected", reason=e.reason, detail=str(e))
        return g, None, None
    except Exception as e:  # noqa: BLE001
        g.update(status="rejected", reason="internal_error", detail=f"encode: {type(e).__name__}: {e}")
        return g, None, None
    n = rec.size
    why = filt.move_reasons(enc.target, enc.move_number, enc.player_rank, enc.opponent_rank, n * n)
    keep = why == 0
    g["pos_moves"] = int(len(why))
    g["pos_filtered"] = {MOVE_REASONS[i - 1]: int(c) for i, c in zip(*np.unique(why[~keep], return_counts=True))}
    k = int(keep.sum())
    g["positions"] = k
    if k == 0:
        g.update(status="filtered", reason="no_positions")
        return g, None, None
    g["status"] = "ok"
    planes = enc.planes[keep]
    cols = np.zeros(k, dtype=_SPILL_DTYPE)
    cols["target"] = enc.target[keep]
    cols["to_move"] = enc.to_move[keep]
    cols["move_number"] = enc.move_number[keep]
    cols["player_rank"] = enc.player_rank[keep]
    cols["opponent_rank"] = enc.opponent_rank[keep]
    if symmetries == "all":
        from . import symmetries as sym

        s = np.tile(np.arange(8, dtype=np.int64), k)
        planes = sym.apply_planes_batch(np.repeat(planes, 8, axis=0), s)
        cols = np.repeat(cols, 8)
        cols["target"] = sym.apply_index_batch(cols["target"].astype(np.int64), s, n)
        cols["symmetry"] = s
    return g, planes, cols


def encode_unit(u: int, sources: list, cfg: dict, work: str, isolate: bool = False,
                skip: tuple[int, ...] = ()) -> dict:
    """Encode work unit ``u`` into ``work/units/unit-NNNNN`` (atomic); returns its summary.

    ``isolate``: write the index of the record in progress to ``unit-NNNNN.inprogress`` before each record, so
    that a crash can be pinned on it. ``skip``: record indices that crashed a worker before (rejected).
    """
    from . import features

    fs = features.get(cfg["features"])
    filt = Filters(**cfg["filters"])
    rule = cfg["rule"]
    final = _unit_dir(work, u)
    tmp = f"{final}.tmp-{os.getpid()}"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    marker = f"{final}.inprogress"
    games, cols_parts, rows = [], [], 0
    with open(os.path.join(tmp, "planes.bin"), "wb") as pf:
        for i, src in enumerate(sources):
            if i in skip:
                games.append({"path": src.path, "status": "rejected", "reason": "worker_crash",
                              "detail": "the worker process died while encoding this record"})
                continue
            if isolate:
                with open(marker, "w") as m:
                    m.write(str(i))
            try:
                g, planes, cols = _encode_one(src, fs, filt, rule, cfg["symmetries"])
                packed = shards_mod.pack_points(planes).tobytes() if planes is not None else None
            except Exception as e:  # noqa: BLE001 - a bug on one record must not stop the build
                g, planes = {"path": src.path, "status": "rejected", "reason": "internal_error",
                             "detail": f"{type(e).__name__}: {e}"}, None
            if planes is not None:
                cols["game"] = i
                pf.write(packed)
                cols_parts.append(cols)
                g["rows"] = int(len(cols))
                rows += len(cols)
            games.append(g)
    cols_all = np.concatenate(cols_parts) if cols_parts else np.zeros(0, _SPILL_DTYPE)
    np.save(os.path.join(tmp, "cols.npy"), cols_all)
    summary = {"unit": u, "records": len(sources), "rows": int(rows),
               "positions": int(sum(g.get("positions", 0) for g in games if g["status"] == "ok")),
               "width": cfg["board_size"] ** 2 * shards_mod.point_width(fs.num_stored)}
    with open(os.path.join(tmp, "games.json"), "w", encoding="ascii") as f:
        json.dump(games, f)  # ASCII escapes: paths from the file system may hold undecodable bytes
    with open(os.path.join(tmp, "summary.json"), "w") as f:
        json.dump(summary, f)
    if os.path.exists(final):
        shutil.rmtree(final)
    os.replace(tmp, final)
    if isolate and os.path.exists(marker):
        os.remove(marker)
    return summary


def _read_unit(work: str, u: int) -> tuple[dict, list[dict]]:
    d = _unit_dir(work, u)
    with open(os.path.join(d, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(d, "games.json"), encoding="utf-8") as f:
        games = json.load(f)
    return summary, games


def _unit_arrays(work: str, u: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    d = _unit_dir(work, u)
    cols = np.load(os.path.join(d, "cols.npy"), mmap_mode="r")
    n = len(cols)
    if n == 0:
        return np.zeros((0, width), np.uint8), cols
    planes = np.memmap(os.path.join(d, "planes.bin"), dtype=np.uint8, mode="r", shape=(n, width))
    return planes, cols


# ------------------------------------------------------------------------------------------------------------
# stage 3: write one shard (runs in a worker process)

def write_one_shard(task: dict) -> dict:
    """Gather the shard's rows from the spill files (one unit mapped at a time) and write it atomically.

    Returns the shard's manifest entry."""
    storage = Storage(**task["storage"])
    n, cs = task["board_size"], task["num_stored"]
    w = shards_mod.point_width(cs)
    width = n * n * w
    src_unit, src_row, game_index = task["src_unit"], task["src_row"], task["game_index"]
    rows = len(src_unit)
    names = list(BASE_COLUMNS) + (["symmetry"] if task["symmetries"] == "all" else [])
    points = np.empty((rows, width), np.uint8)
    cols = {k: np.empty(rows, shards_mod.COLUMN_DTYPES[k]) for k in names}
    for u in np.unique(src_unit):
        sel = np.flatnonzero(src_unit == u)
        r = src_row[sel]
        planes, spill = _unit_arrays(task["work"], int(u), width)
        points[sel] = planes[r]
        c = spill[r]
        del planes, spill
        for k in names:
            cols[k][sel] = game_index[str(int(u))][c["game"]] if k == "game_index" else c[k]
    layout = shards_mod.write_shard(task["path"], points.reshape(rows, n, n, w), cols, num_stored=cs,
                                    storage=storage, attrs=task["attrs"])
    return {"file": task["rel"], "rows": rows, "layout": layout, "sha256": shards_mod.sha256_file(task["path"])}


# ------------------------------------------------------------------------------------------------------------
# the build

def _check_features(fs) -> None:
    missing = [c for c in fs.columns if c not in BASE_COLUMNS]
    if missing:
        raise BuildError(f"feature set {fs.name} needs per-row columns {missing} that the build does not write")


def _acquire_lock(work: str):
    os.makedirs(work, exist_ok=True)
    fd = os.open(os.path.join(work, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise BuildError(f"another build is running on {os.path.dirname(work)}") from None
    return fd


def _prepare_out(cfg: BuildConfig, fingerprint: dict) -> str | None:
    """Check DIR against the fingerprint. Returns 'done' if an identical dataset is complete there."""
    out, work = cfg.out, os.path.join(cfg.out, WORK)
    fp_path = os.path.join(work, "fingerprint.json")
    man_path = os.path.join(out, MANIFEST)
    fp_hash = _hash_json(fingerprint)
    if os.path.isdir(out) and os.listdir(out):
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
            if _hash_json(old_fp) != fp_hash:
                changed = sorted(k for k in set(old_fp) | set(fingerprint) if old_fp.get(k) != fingerprint.get(k))
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
        if name in (MANIFEST, REJECTS, WORK) or name.endswith(".tmp"):
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        elif os.path.isdir(p) and os.path.exists(os.path.join(p, "games.h5")) or (
                os.path.isdir(p) and any(f.startswith("shard-") for f in os.listdir(p))):
            shutil.rmtree(p)
        else:
            raise BuildError(f"{out} holds {name!r}, which kifunet did not write; not overwriting")


def _hash_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _iter_units(sources, size: int):
    unit, u = [], 0
    for s in sources:
        unit.append(s)
        if len(unit) == size:
            yield u, unit
            unit, u = [], u + 1
    if unit:
        yield u, unit


class _Progress:
    def __init__(self, enabled: bool | None, total: int | None, desc: str, unit: str = "game"):
        self.bar = None
        self.t0 = time.time()
        self.positions = 0
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, smoothing=0.1)

    def update(self, games: int, positions: int):
        self.positions += positions
        if self.bar is not None:
            self.bar.update(games)
            dt = max(time.time() - self.t0, 1e-9)
            self.bar.set_postfix_str(f"{self.positions / dt:,.0f} pos/s", refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _mp_context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["kifunet.data_prep.build", "kifunet.data_prep.replay",
                                "kifunet.data_prep.sgf_io", "kifunet.data_prep.features", "h5py"])
    return ctx


def _run_isolated(u, sources, ucfg, work, log: Callable[[str], None]) -> dict:
    """Rerun a unit in a fresh single process per attempt, rejecting each record that kills the worker."""
    marker = f"{_unit_dir(work, u)}.inprogress"
    skip: list[int] = []
    while True:
        if os.path.exists(marker):
            os.remove(marker)
        with cf.ProcessPoolExecutor(1, mp_context=_mp_context()) as ex:
            fut = ex.submit(encode_unit, u, sources, ucfg, work, True, tuple(skip))
            try:
                return fut.result()
            except cf.process.BrokenProcessPool:
                try:
                    with open(marker) as f:
                        bad = int(f.read().strip())
                except (OSError, ValueError):
                    raise RuntimeError(f"unit {u}: worker died outside any record") from None
                log(f"worker crashed on {sources[bad].path}; rejecting it (worker_crash)")
                skip.append(bad)


class _Pool:
    """The build's worker processes, shared by the encode and write stages; replaced if it breaks."""

    def __init__(self, workers: int):
        self.workers = workers
        self.ex = cf.ProcessPoolExecutor(workers, mp_context=_mp_context())

    def restart(self):
        self.ex.shutdown(wait=True, cancel_futures=True)
        self.ex = cf.ProcessPoolExecutor(self.workers, mp_context=_mp_context())

    def close(self):
        self.ex.shutdown(wait=True, cancel_futures=True)


def _encode_stage(cfg: BuildConfig, ucfg: dict, work: str, infos: list, log, pool: _Pool | None) -> list[dict]:
    """Stage 1 over all units; returns the unit summaries in order."""
    units_dir = os.path.join(work, "units")
    os.makedirs(units_dir, exist_ok=True)
    for name in os.listdir(units_dir):  # leftovers of an interrupted run
        p = os.path.join(units_dir, name)
        if ".tmp-" in name:
            shutil.rmtree(p, ignore_errors=True)
    show = sys.stderr.isatty() if cfg.progress is None else cfg.progress
    total = inputs_mod.count_sources(cfg.inputs) if show else None  # one extra read, for the ETA
    prog = _Progress(show, total, "encode")
    summaries: dict[int, dict] = {}
    sources = inputs_mod.iter_sources(cfg.inputs, infos)
    try:
        if pool is None:
            for u, unit in _iter_units(sources, cfg.unit_games):
                if os.path.exists(os.path.join(_unit_dir(work, u), "summary.json")):
                    s, _ = _read_unit(work, u)
                else:
                    s = encode_unit(u, unit, ucfg, work)
                summaries[u] = s
                prog.update(s["records"], s["positions"])
        else:
            pending: dict = {}
            crashed: list = []

            def drain():
                """Wait for at least one unit in flight; on a crashed pool, rerun its units in isolation."""
                ready, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for fut in ready:
                    u, unit = pending.pop(fut)
                    try:
                        s = fut.result()
                    except cf.process.BrokenProcessPool:
                        crashed.append((u, unit))
                        continue
                    summaries[u] = s
                    prog.update(s["records"], s["positions"])
                if crashed:
                    # Every unit in flight died with the pool: collect them all, rerun each in isolation.
                    for fut in list(pending):
                        crashed.append(pending.pop(fut))
                    pool.ex.shutdown(wait=True, cancel_futures=True)
                    for u, unit in sorted(crashed, key=lambda x: x[0]):
                        s = _run_isolated(u, unit, ucfg, work, log)
                        summaries[u] = s
                        prog.update(s["records"], s["positions"])
                    crashed.clear()
                    pool.restart()

            for u, unit in _iter_units(sources, cfg.unit_games):
                if os.path.exists(os.path.join(_unit_dir(work, u), "summary.json")):
                    s, _ = _read_unit(work, u)
                    summaries[u] = s
                    prog.update(s["records"], s["positions"])
                    continue
                while len(pending) >= 2 * cfg.workers:
                    drain()
                pending[pool.ex.submit(encode_unit, u, unit, ucfg, work)] = (u, unit)
            while pending:
                drain()
    finally:
        prog.close()
    return [summaries[u] for u in sorted(summaries)]


def _plan(cfg: BuildConfig, work: str, summaries: list[dict], split_names: list[str], infos: list):
    """Dedupe, games tables, per-split row lists, accounting; writes the rejects log to work/."""
    seen_moves: dict[str, str] = {}
    counts = {"seen": 0, "used": 0, "filtered": Counter(), "rejected": Counter()}
    pos = {"moves": 0, "kept": 0, "filtered": Counter()}
    per_split = {s: {"games": [], "units": {}, "positions": 0, "rows": 0} for s in split_names}
    examples: dict[str, list[str]] = {}
    with open(os.path.join(work, "rejects.jsonl.part"), "w", encoding="utf-8", errors="backslashreplace") as rejects:
        for s in summaries:
            u = s["unit"]
            _, games = _read_unit(work, u)
            kept: dict[str, list[np.ndarray]] = {}
            gmaps: dict[str, np.ndarray] = {}
            game_col = None
            for i, g in enumerate(games):
                counts["seen"] += 1
                if g["status"] == "ok" and cfg.filters.dedupe:
                    first = seen_moves.get(g["moves_hash"])
                    if first is not None:
                        g["status"], g["reason"], g["detail"] = "filtered", "duplicate", f"same moves as {first}"
                    else:
                        seen_moves[g["moves_hash"]] = g["path"]
                if g["status"] != "ok":
                    key = "filtered" if g["status"] == "filtered" else "rejected"
                    counts[key][g["reason"]] += 1
                    ex = examples.setdefault(f"{key}:{g['reason']}", [])
                    if len(ex) < 3:
                        ex.append(g["path"])
                    line = {"path": g["path"], "status": g["status"], "reason": g["reason"]}
                    for k in ("detail", "move_number", "move", "colour"):
                        if g.get(k) not in (None, ""):
                            line[k] = g[k]
                    rejects.write(json.dumps(line, ensure_ascii=False) + "\n")
                    continue
                counts["used"] += 1
                split = g["split"]
                sp = per_split[split]
                gmaps.setdefault(split, np.full(len(games), -1, np.int32))[i] = len(sp["games"])
                sp["games"].append({k: g.get(k) for k in
                                    shards_mod.GAME_STR_COLUMNS + tuple(shards_mod.GAME_NUM_COLUMNS)})
                sp["positions"] += g["positions"]
                sp["rows"] += g["rows"]
                pos["moves"] += g["pos_moves"]
                pos["kept"] += g["positions"]
                pos["filtered"].update(g["pos_filtered"])
                if game_col is None:
                    game_col = np.load(os.path.join(_unit_dir(work, u), "cols.npy"), mmap_mode="r")["game"]
                a, b = np.searchsorted(game_col, [i, i + 1])  # a game's rows are consecutive in its unit
                kept.setdefault(split, []).append(np.arange(a, b, dtype=np.int32))
            for split, parts in kept.items():
                per_split[split]["units"][u] = (np.concatenate(parts), gmaps[split])
            del game_col
        for info in infos:
            for err in info.errors:
                rejects.write(json.dumps({"path": err["path"], "status": "input_error", "reason": err["reason"],
                                          "detail": err["detail"]}, ensure_ascii=False) + "\n")
    accounting = {
        "seen": counts["seen"], "used": counts["used"],
        "filtered": dict(sorted(counts["filtered"].items())), "rejected": dict(sorted(counts["rejected"].items())),
        "positions": {"moves": pos["moves"], "kept": pos["kept"], "filtered": dict(sorted(pos["filtered"].items()))},
        "examples": dict(sorted(examples.items())),
    }
    return per_split, accounting


def _shard_sizes(n: int, shard_rows: int) -> list[int]:
    if n == 0:
        return []
    k = -(-n // shard_rows)
    base, extra = divmod(n, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


def _split_seed(seed: int, split: str) -> np.random.Generator:
    h = int.from_bytes(hashlib.sha256(split.encode()).digest()[:8], "big")
    return np.random.default_rng(np.random.SeedSequence([int(seed) & (2**63 - 1), h]))


def _shard_tasks(cfg: BuildConfig, work: str, split: str, sp: dict, fs):
    units = sorted(sp["units"])
    counts = np.array([len(sp["units"][u][0]) for u in units], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    n = int(offsets[-1])
    order = _split_seed(cfg.seed, split).permutation(n)
    game_index = {str(u): sp["units"][u][1] for u in units}
    unit_arr = np.array(units, dtype=np.int64)
    a = 0
    for k, size in enumerate(_shard_sizes(n, cfg.shard_rows)):
        src = order[a:a + size]
        ui = np.searchsorted(offsets, src, side="right") - 1
        local = src - offsets[ui]
        src_row = np.empty(size, np.int64)
        for j in np.unique(ui):
            sel = np.flatnonzero(ui == j)
            src_row[sel] = sp["units"][units[j]][0][local[sel]]
        rel = f"{split}/shard-{k:05d}.h5"
        yield {
            "path": os.path.join(cfg.out, rel), "rel": rel, "work": work, "storage": dataclasses.asdict(cfg.storage),
            "board_size": cfg.filters.board_size, "num_stored": fs.num_stored,
            "src_unit": unit_arr[ui], "src_row": src_row, "game_index": game_index,
            "symmetries": cfg.symmetries,
            "attrs": {"feature_set": fs.name, "feature_version": fs.version, "split": split, "shard": k},
        }
        a += size


def build(cfg: BuildConfig, log: Callable[[str], None] | None = None, timings: dict | None = None) -> dict:
    """Run (or resume) a build. Returns the manifest; ``timings`` (if given) receives seconds per stage."""
    from . import features

    log = log or (lambda msg: print(msg, file=sys.stderr))
    t0 = time.time()
    fs = features.get(cfg.features)
    _check_features(fs)
    fingerprint = cfg.fingerprint()
    os.makedirs(cfg.out, exist_ok=True)
    state = _prepare_out(cfg, fingerprint)
    if state == "done":
        log(f"{cfg.out}: already built with these settings (manifest.json); nothing to do")
        with open(os.path.join(cfg.out, MANIFEST), encoding="utf-8") as f:
            return json.load(f)
    work = os.path.join(cfg.out, WORK)
    lock = _acquire_lock(work)
    pool = None
    try:
        fp_path = os.path.join(work, "fingerprint.json")
        if not os.path.exists(fp_path):
            shards_mod.write_json_atomic(fp_path, fingerprint)
        split_names = cfg.splits.names()
        ucfg = {"features": cfg.features, "filters": dataclasses.asdict(cfg.filters), "rule": cfg.splits,
                "symmetries": cfg.symmetries, "board_size": cfg.filters.board_size}
        infos: list = []
        pool = _Pool(cfg.workers) if cfg.workers >= 1 else None
        summaries = _encode_stage(cfg, ucfg, work, infos, log, pool)
        t_encode = time.time()
        per_split, accounting = _plan(cfg, work, summaries, split_names, infos)
        tasks = []
        for split in split_names:
            os.makedirs(os.path.join(cfg.out, split), exist_ok=True)
            for t in _shard_tasks(cfg, work, split, per_split[split], fs):
                tasks.append(t)
        # stale temporaries from an interrupted run
        for split in split_names:
            d = os.path.join(cfg.out, split)
            for name in os.listdir(d):
                if name.endswith(".tmp"):
                    os.remove(os.path.join(d, name))
        t_plan = time.time()
        results: dict[str, dict] = {}
        todo = []
        for t in tasks:
            if os.path.exists(t["path"]):
                results[t["rel"]] = {"file": t["rel"], "rows": len(t["src_unit"]),
                                     "layout": shards_mod.shard_layout(t["path"]),
                                     "sha256": shards_mod.sha256_file(t["path"])}
            else:
                todo.append(t)
        prog = _Progress(cfg.progress, len(tasks), "write", unit="shard")
        prog.update(len(tasks) - len(todo), 0)
        try:
            if pool is None or cfg.workers == 1 or len(todo) <= 1:
                for t in todo:
                    r = write_one_shard(t)
                    results[r["file"]] = r
                    prog.update(1, r["rows"])
            else:
                for r in pool.ex.map(write_one_shard, todo):
                    results[r["file"]] = r
                    prog.update(1, r["rows"])
        finally:
            prog.close()
        t_write = time.time()
        for split in split_names:
            sp = per_split[split]
            shards_mod.write_games_table(os.path.join(cfg.out, split, "games.h5"), sp["games"],
                                         attrs={"split": split})
        manifest = _manifest(cfg, fs, fingerprint, infos, accounting, per_split, split_names, results, tasks)
        os.replace(os.path.join(work, "rejects.jsonl.part"), os.path.join(cfg.out, REJECTS))
        shards_mod.write_json_atomic(os.path.join(cfg.out, MANIFEST), manifest)
    finally:
        if pool is not None:
            pool.close()
        os.close(lock)
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


def _manifest(cfg, fs, fingerprint, infos, accounting, per_split, split_names, results, tasks) -> dict:
    splits = {}
    for s in split_names:
        sp = per_split[s]
        files = [results[t["rel"]] for t in tasks if t["rel"].startswith(f"{s}/")]
        splits[s] = {"games": len(sp["games"]), "positions": sp["positions"], "rows": sp["rows"],
                     "games_table": f"{s}/games.h5", "shards": files}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool": {"name": "kifunet", "version": tool_version()},
        "fingerprint": _hash_json(fingerprint),
        "features": {"name": fs.name, "version": fs.version, "num_planes": fs.num_planes,
                     "num_stored": fs.num_stored, "columns": list(fs.columns), "plane_names": fs.plane_names()},
        "board_size": cfg.filters.board_size,
        "columns": list(BASE_COLUMNS) + (["symmetry"] if cfg.symmetries == "all" else []),
        "storage": cfg.storage.to_json(),
        "shard_rows": cfg.shard_rows,
        "symmetries": cfg.symmetries,
        "seed": cfg.seed,
        "shuffle": "one permutation per split of all its rows, numpy default_rng(SeedSequence([seed, "
                   "sha256(split)[:8]])); shards are consecutive slices of it",
        "preset": cfg.preset,
        "options": cfg.options,
        "filters": cfg.filters.to_json(),
        "split_rule": cfg.splits.to_json(),
        "illegal_moves": ILLEGAL_MOVE_POLICY,
        "dedupe": "first copy in input order among games that pass every filter (GameRecord.moves_hash)"
                  if cfg.filters.dedupe else "off",
        "inputs": [i.to_json() for i in infos],
        "counts": accounting,
        "splits": splits,
        "unit_games": cfg.unit_games,
    }


def read_manifest(root: str) -> dict:
    path = os.path.join(root, MANIFEST)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{root}: no {MANIFEST}; not a finished kifunet dataset")
    with open(path, encoding="utf-8") as f:
        return json.load(f)
