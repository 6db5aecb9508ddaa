"""Build stage 1, encode: game records -> work units of encoded positions spilled to ``WORK/units/``.

The records (in input order) are cut into work units of ``unit_games`` records (:func:`encode_inputs`); a worker
encodes each unit (:func:`encode_unit`), and per record (:func:`encode_record`): load, check the column limits
(:data:`COLUMN_LIMITS`), game filters and split rule, replay (an illegal move rejects the game,
``illegal_move:<why>``), move filters, packed points of the kept positions. A unit's output depends only on its
records and the options. A rerun reuses a unit only when :func:`unit_damage` finds every file matching its
``sha256.json``; a damaged unit is encoded again, byte-identically. A record that kills a worker twice is rejected
as ``worker_crash``. The spill files: docs/building.md ("File formats").
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable

import numpy as np

from kifunet.data_prep.fileio import atomic

from ..sgf import inputs as inputs_mod
from .. import profiles
from ..errors import UserError
from .. import results as results_mod
from ..datasets import shards as shards_mod
from ..rules import final_ownership
from .build_space import count_moves_in
from ..errors import IllegalMoveError, KifunetInputError, naming
from .filters import MOVE_REASONS, Filters
from .progress import Progress
from .worker_pool import WorkerPool, run_isolated

UNIT_GAMES = 256  # records per work unit, by default
# What a unit's spill holds. Part of the build's fingerprint, so that a build started by a kifunet whose units
# hold something else is never resumed with them. 2: game dicts carry ``game_id`` (the dedupe key). 3: rows
# carry ``outcome``, game dicts ``result_kind``, ``winner`` and ``margin``. 4: game dicts carry the profile codes
# ``days``, ``source`` and ``time_control`` (issue 33). 5: game dicts carry ``ownership`` (text of
# :func:`kifunet.data_prep.rules.final_ownership.encode`), ``ownership_source`` and ``estimate_agreement``.
SPILL_VERSION = 5

SPILL_DTYPE = np.dtype([("target", np.int16), ("to_move", np.int8), ("move_number", np.int16),
                        ("player_rank", np.int8), ("opponent_rank", np.int8), ("game", np.int32),
                        ("symmetry", np.int8), ("outcome", np.int8)])


# Games-table integer columns -> the reason a record whose value does not fit the column's dtype is rejected
# with (docs/building.md tables them). Checked before the record is replayed.
COLUMN_LIMITS = {"num_moves": "too_many_moves", "positions": "too_many_moves", "handicap": "bad_handicap",
                 "black_rank": "bad_rank", "white_rank": "bad_rank", "year": "bad_year", "size": "board_size",
                 "result_kind": "bad_result", "winner": "bad_result", "days": "bad_year", "source": "bad_source",
                 "time_control": "bad_time_control",
                 # computed here, always in range; checked so that a change cannot bring a crash
                 "ownership_source": "internal_error", "estimate_agreement": "internal_error"}


class SpillDamaged(UserError, ValueError):
    """A work unit's spill on disk is shorter than its columns say (a build stopped mid-write): rerunning the same
    command checks the unit and encodes it again."""


def limit_reason(g: dict) -> tuple[str, str] | None:
    """``(reason, detail)`` for the first games-table column of game dict ``g`` whose value does not fit the
    column's dtype (:data:`COLUMN_LIMITS`), else None. Columns absent from ``g`` or None are skipped."""
    for col, reason in COLUMN_LIMITS.items():
        v = g.get(col)
        if v is None:
            continue
        dt = np.dtype(shards_mod.GAME_NUM_COLUMNS[col])
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
        if not lo <= v <= hi:
            return reason, (f"{col} {v:,} is outside {lo:,}..{hi:,}, the range of the {dt.name} column it is "
                            "stored in")
    return None


def _komi(komi: float | None) -> float | None:
    """Komi as stored (float32): None (unknown, NaN in the games table) when float32 cannot hold it."""
    if komi is None:
        return None
    with np.errstate(over="ignore"):
        return komi if np.isfinite(np.float32(komi)) else None


def unit_config(features, filters: Filters, rule, symmetries: str = "none", source: str | None = None,
                targets: bool = True) -> dict:
    """The options a work unit is encoded with, pickled to the workers with each unit. ``features``: the
    :class:`~kifunet.data_prep.planes.features.FeatureSet`; ``source``: the build's declared source (one of
    :data:`kifunet.data_prep.profiles.SOURCES`), which wins over each record's; None reads the record's.
    ``targets``: False leaves every game's ownership target out (source ``none``; ``kifunet build --no-targets``)."""
    return {"features": features, "filters": dataclasses.asdict(filters), "rule": rule,
            "symmetries": symmetries, "board_size": filters.board_size, "source": source, "targets": targets}


def spill_row_bytes(n: int, num_stored: int) -> int:
    """Bytes a position takes in the spill on an ``n`` x ``n`` board with ``num_stored`` stored planes: its packed
    points in ``planes.bin`` and its :data:`SPILL_DTYPE` row in ``cols.npy``."""
    return n * n * shards_mod.point_width(num_stored) + SPILL_DTYPE.itemsize


#: the file of a unit's spill that records the sha256 of the others; written last (docs/building.md, "File formats")
UNIT_CHECKSUMS = "sha256.json"
#: the files of a unit's spill that :data:`UNIT_CHECKSUMS` covers
UNIT_FILES = ("planes.bin", "cols.npy", "games.json", "summary.json")


def unit_dir(work: str, u: int) -> str:
    """The spill directory of work unit ``u``."""
    return os.path.join(work, "units", f"unit-{u:05d}")


def _marker(work: str, u: int) -> str:
    """The file naming the record in progress of a unit encoded in isolation."""
    return f"{unit_dir(work, u)}.inprogress"


def _game_meta(rec, source: str | None = None) -> dict:
    i = rec.info
    return {**profiles.game_codes(i, source=source), "black": i.black, "white": i.white, "black_rank": int(i.black_rank), "white_rank": int(i.white_rank),
            "black_rank_text": i.black_rank_text, "white_rank_text": i.white_rank_text,
            "komi": _komi(i.komi), "handicap": int(i.handicap or 0), "result": i.result,
            "result_kind": results_mod.KIND_CODES[i.result_kind], "winner": int(i.winner),
            "margin": float(i.margin) if np.isfinite(i.margin) else None, "date": i.date,
            "year": i.year, "rules": i.rules, "size": int(rec.size), "content_hash": i.content_hash,
            "num_moves": int(rec.num_moves)}


def admit(src, filt: Filters, rule, source: str | None = None):
    """Load a record (a :class:`~kifunet.data_prep.sgf.inputs.Source`), check its column limits, game filters and
    split rule: ``(game dict with its split, record)`` for a game to replay, else ``(game dict, None)`` with
    ``status`` and ``reason``. Never raises for a bad record. ``source``: as :func:`unit_config`."""
    from ..sgf import sgf_io

    g = {"path": src.path}
    if src.error is not None:
        g.update(status="rejected", reason=src.error, detail=src.detail)
        return g, None
    try:
        rec = sgf_io.load_game(src.data, path=src.path)
    except KifunetInputError as e:
        g.update(status="rejected", reason=e.reason, detail=str(e))
        return g, None
    except Exception as e:  # noqa: BLE001 - a bug on one record must not stop the build
        g.update(status="rejected", reason="internal_error", detail=f"load: {type(e).__name__}: {e}")
        return g, None
    g.update(_game_meta(rec, source))
    g["moves_hash"] = rec.moves_hash()  # the hash splits' key
    g["game_id"] = rec.game_id()  # the dedupe key (copies of one game share it; games sharing moves do not)
    over = limit_reason(g)
    if over is not None:  # a value its column cannot hold: rejected before any writer sees it
        g.update(status="rejected", reason=over[0], detail=over[1])
        return g, None
    reason = filt.game_reason(rec)
    split = None
    if reason is None:
        split, reason = rule.assign(rec.info, g["moves_hash"])
    if reason is not None:
        g.update(status="filtered", reason=reason)
        return g, None
    g["split"] = split
    return g, rec


def kept_positions(src, filt: Filters, rule) -> int:
    """Positions of a record the build keeps, without replaying it: 0 unless :func:`admit` admits the game, else
    its moves that pass the move filters (a game with an illegal move is counted; the build rejects it)."""
    from ..game import BLACK, MOVE

    _, rec = admit(src, filt, rule)
    if rec is None:
        return 0
    is_move = rec.kinds == MOVE
    black = rec.colours[is_move] == BLACK
    info = rec.info
    player = np.where(black, info.black_rank, info.white_rank)
    opponent = np.where(black, info.white_rank, info.black_rank)
    number = np.arange(1, len(black) + 1)
    return int(np.count_nonzero(filt.move_reasons(rec.points[is_move], number, player, opponent,
                                                  rec.size * rec.size) == 0))


def sample_kept(inputs: list[str], step: int, filt: Filters, rule) -> tuple[int, int]:
    """(positions kept, moves) of every ``step``-th record of ``inputs``: the space estimate's sample. Loads
    records: run it in a worker where there are workers."""
    kept = moves = 0
    for i, src in enumerate(inputs_mod.iter_sources(inputs)):
        if i % step == 0:
            kept += kept_positions(src, filt, rule)
            moves += count_moves_in(src.data)
    return kept, moves


def _encode_one(src, fs, filt: Filters, rule, symmetries: str, source: str | None = None, targets: bool = True):
    """(game dict, planes uint8[R, N, N, Cs] | None, spill columns | None) for one record."""
    from ..planes import replay

    g, rec = admit(src, filt, rule, source)
    if rec is None:
        return g, None, None
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
    if targets:
        own, g["ownership_source"], g["estimate_agreement"] = final_ownership.game_targets(rec)
    else:
        own, g["ownership_source"], g["estimate_agreement"] = None, final_ownership.NONE, -1
    g["ownership"] = final_ownership.encode(own) if g["ownership_source"] else ""
    over = limit_reason(g)  # every column of the games table is known now
    if over is not None:
        g.update(status="rejected", reason=over[0], detail=over[1])
        return g, None, None
    g["status"] = "ok"
    planes = enc.planes[keep]
    cols = np.zeros(k, dtype=SPILL_DTYPE)
    cols["target"] = enc.target[keep]
    cols["to_move"] = enc.to_move[keep]
    cols["move_number"] = enc.move_number[keep]
    cols["player_rank"] = enc.player_rank[keep]
    cols["opponent_rank"] = enc.opponent_rank[keep]
    cols["outcome"] = results_mod.outcome(rec.info.result_kind, rec.info.winner, cols["to_move"])
    if symmetries == "all":
        from .. import symmetries as sym

        s = np.tile(np.arange(8, dtype=np.int64), k)
        planes = sym.apply_planes_batch(np.repeat(planes, 8, axis=0), s)
        cols = np.repeat(cols, 8)
        cols["target"] = sym.apply_index_batch(cols["target"].astype(np.int64), s, n)
        cols["symmetry"] = s
    return g, planes, cols


def encode_record(src, fs, filt: Filters, rule, symmetries: str = "none", source: str | None = None,
                  targets: bool = True):
    """One record -> (game dict, packed points uint8 [R, N, N, W] | None, :data:`SPILL_DTYPE` columns | None); the
    arrays are None unless ``status`` is ``ok``. Never raises for a bad record (a bug rejects it as
    ``internal_error``). ``source``, ``targets``: as :func:`unit_config`."""
    try:
        g, planes, cols = _encode_one(src, fs, filt, rule, symmetries, source, targets)
        packed = shards_mod.pack_points(planes) if planes is not None else None
    except Exception as e:  # noqa: BLE001 - a bug on one record must not stop the build
        g, packed, cols = ({"path": src.path, "status": "rejected", "reason": "internal_error",
                            "detail": f"{type(e).__name__}: {e}"}, None, None)
    return g, packed, cols


@contextlib.contextmanager
def _naming(tmp: str):
    """Writes into a unit's temporary directory ``tmp``: on an ``OSError`` (a full disk) ``tmp`` is removed, giving
    its space back, and an error that names no file (a write to an open file) is raised naming ``tmp``."""
    try:
        with naming(tmp):
            yield
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def encode_unit(u: int, sources: list, cfg: dict, work: str, isolate: bool = False,
                skip: tuple[int, ...] = ()) -> dict:
    """Encode work unit ``u`` into :func:`unit_dir` (atomic); returns its summary. ``cfg``: :func:`unit_config`.

    ``isolate``: write the index of the record in progress to ``unit-NNNNN.inprogress`` before each record, so
    that a crash can be pinned on it. ``skip``: record indices that crashed a worker before (rejected)."""
    fs = cfg["features"]
    filt = Filters(**cfg["filters"])
    rule = cfg["rule"]
    final = unit_dir(work, u)
    tmp = f"{final}.tmp-{os.getpid()}"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    marker = _marker(work, u)
    games, cols_parts, rows = [], [], 0
    planes_sha = hashlib.sha256()
    with _naming(tmp):
        with open(os.path.join(tmp, "planes.bin"), "wb") as pf:
            for i, src in enumerate(sources):
                if i in skip:
                    games.append({"path": src.path, "status": "rejected", "reason": "worker_crash",
                                  "detail": "the worker process died while encoding this record"})
                    continue
                if isolate:
                    with open(marker, "w") as m:
                        m.write(str(i))
                g, packed, cols = encode_record(src, fs, filt, rule, cfg["symmetries"], cfg.get("source"),
                                                cfg.get("targets", True))
                if packed is not None:
                    cols["game"] = i
                    block = packed.tobytes()
                    pf.write(block)
                    planes_sha.update(block)
                    cols_parts.append(cols)
                    g["rows"] = int(len(cols))
                    rows += len(cols)
                games.append(g)
        cols_all = np.concatenate(cols_parts) if cols_parts else np.zeros(0, SPILL_DTYPE)
        np.save(os.path.join(tmp, "cols.npy"), cols_all)
        summary = {"unit": u, "records": len(sources), "rows": int(rows),
                   "positions": int(sum(g.get("positions", 0) for g in games if g["status"] == "ok")),
                   "width": cfg["board_size"] ** 2 * shards_mod.point_width(fs.num_stored)}
        with open(os.path.join(tmp, "games.json"), "w", encoding="ascii") as f:
            json.dump(games, f)  # ASCII escapes: paths from the file system may hold undecodable bytes
        with open(os.path.join(tmp, "summary.json"), "w") as f:
            json.dump(summary, f)
        _seal(tmp, planes_sha.hexdigest())
    if os.path.exists(final):
        shutil.rmtree(final)
    atomic.commit(tmp, final)
    if isolate and os.path.exists(marker):
        os.remove(marker)
    return summary


def _seal(d: str, planes_sha256: str) -> None:
    """Write ``d``'s :data:`UNIT_CHECKSUMS` (the sha256 of every file of :data:`UNIT_FILES`; ``planes.bin``'s as
    hashed while it was written), last: to a temporary name, flushed to disk, then renamed."""
    sums = {name: planes_sha256 if name == "planes.bin" else shards_mod.sha256_file(os.path.join(d, name))
            for name in UNIT_FILES}
    atomic.write_text_atomic(os.path.join(d, UNIT_CHECKSUMS), json.dumps(sums), encoding="ascii")


def unit_damage(work: str, u: int) -> str | None:
    """Why the finished unit ``u`` cannot be reused (its files against its :data:`UNIT_CHECKSUMS`; see the module
    docstring), or None when it is intact."""
    d = unit_dir(work, u)
    try:
        with open(os.path.join(d, UNIT_CHECKSUMS), encoding="ascii") as f:
            sums = json.load(f)
    except FileNotFoundError:
        return f"no {UNIT_CHECKSUMS} (the unit was not sealed)"
    except (OSError, ValueError) as e:
        return f"{UNIT_CHECKSUMS} cannot be read ({type(e).__name__})"
    if not isinstance(sums, dict) or sorted(sums) != sorted(UNIT_FILES):
        return f"{UNIT_CHECKSUMS} does not list {', '.join(UNIT_FILES)}"
    for name in UNIT_FILES:
        try:
            found = shards_mod.sha256_file(os.path.join(d, name))
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as e:
            return f"{name} cannot be read ({e.strerror or e})"
        if found != sums[name]:
            return f"{name} has sha256 {found[:16]}..., {UNIT_CHECKSUMS} says {str(sums[name])[:16]}... (damaged)"
    return None


def read_unit(work: str, u: int) -> tuple[dict, list[dict]]:
    """(summary, game dicts in record order) of a finished unit."""
    d = unit_dir(work, u)
    with open(os.path.join(d, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(d, "games.json"), encoding="utf-8") as f:
        games = json.load(f)
    return summary, games


def unit_arrays(work: str, u: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(packed points uint8 [rows, width], :data:`SPILL_DTYPE` columns) of a finished unit, memory-mapped;
    ``width``: N * N * W bytes a position (the summary's ``width``)."""
    d = unit_dir(work, u)
    cols = np.load(os.path.join(d, "cols.npy"), mmap_mode="r")
    n = len(cols)
    if n == 0:
        return np.zeros((0, width), np.uint8), cols
    path = os.path.join(d, "planes.bin")
    try:
        planes = np.memmap(path, dtype=np.uint8, mode="r", shape=(n, width))
    except ValueError as e:  # shorter than cols.npy says (numpy names no file)
        raise SpillDamaged(f"{path}: {e}; the spill is damaged: rerun the same command (the unit is checked and "
                         "encoded again)") from None
    return planes, cols


def unit_game_column(work: str, u: int) -> np.ndarray:
    """The ``game`` column of a finished unit's spill (memory-mapped): the record index of each row."""
    return np.load(os.path.join(unit_dir(work, u), "cols.npy"), mmap_mode="r")["game"]


def _iter_units(sources, size: int):
    unit, u = [], 0
    for s in sources:
        unit.append(s)
        if len(unit) == size:
            yield u, unit
            unit, u = [], u + 1
    if unit:
        yield u, unit


def _reusable(work: str, u: int, log: Callable[[str], None]) -> bool:
    """Whether unit ``u`` is finished and intact (:func:`unit_damage`); a damaged one is removed, said in one line,
    to be encoded again."""
    d = unit_dir(work, u)
    if not os.path.isdir(d):
        return False
    why = unit_damage(work, u)
    if why is None:
        return True
    log(f"{d}: {why}; encoding the unit again")
    shutil.rmtree(d)
    return False


def encode_inputs(inputs: list[str], ucfg: dict, work: str, infos: list, *, unit_games: int,
                  pool: WorkerPool | None, progress: bool | None, log: Callable[[str], None],
                  total: int | None = None) -> list[dict]:
    """Stage 1 over all units of ``inputs``: the unit summaries in order; finished intact units are reused, damaged
    ones encoded again (one ``log`` line). ``ucfg``: :func:`unit_config`; ``infos`` receives one ``InputInfo`` per
    input; ``pool`` None encodes in this process (no crash isolation); ``progress`` None shows a bar on a
    terminal; ``total``: the record count, if known."""
    units_dir = os.path.join(work, "units")
    os.makedirs(units_dir, exist_ok=True)
    for name in os.listdir(units_dir):  # leftovers of an interrupted run
        p = os.path.join(units_dir, name)
        if ".tmp-" in name:
            shutil.rmtree(p, ignore_errors=True)
    from .._jit import announce_compile

    announce_compile()  # before the bar, which would sit at 0% while the first unit compiles the kernels
    show = sys.stderr.isatty() if progress is None else progress
    if show and total is None:
        total = inputs_mod.count_sources(inputs)  # one extra read, for the ETA
    prog = Progress(show, total, "encode")
    summaries: dict[int, dict] = {}
    units = _iter_units(inputs_mod.iter_sources(inputs, infos), unit_games)
    try:
        if pool is None:
            for u, unit in units:
                s = read_unit(work, u)[0] if _reusable(work, u, log) else encode_unit(u, unit, ucfg, work)
                _finished(summaries, prog, u, s)
        else:
            _encode_in_pool(units, ucfg, work, pool, log, summaries, prog)
    finally:
        prog.close()
    return [summaries[u] for u in sorted(summaries)]


def _finished(summaries: dict, prog: Progress, u: int, s: dict) -> None:
    """Record unit ``u``'s summary ``s`` and advance the bar."""
    summaries[u] = s
    prog.update(s["records"], s["positions"])


def _encode_in_pool(units, ucfg: dict, work: str, pool: WorkerPool, log: Callable[[str], None], summaries: dict,
                    prog: Progress) -> None:
    """Encode ``units`` ((index, sources) pairs) in ``pool``, at most two per worker in flight, into
    ``summaries``; finished intact units are reused."""
    pending: dict = {}
    for u, unit in units:
        if _reusable(work, u, log):
            _finished(summaries, prog, u, read_unit(work, u)[0])
            continue
        while len(pending) >= 2 * pool.workers:
            _drain(pending, ucfg, work, pool, log, summaries, prog)
        pending[pool.submit(encode_unit, u, unit, ucfg, work)] = (u, unit)
    while pending:
        _drain(pending, ucfg, work, pool, log, summaries, prog)


def _drain(pending: dict, ucfg: dict, work: str, pool: WorkerPool, log: Callable[[str], None], summaries: dict,
           prog: Progress) -> None:
    """Wait for at least one unit in flight (``pending``: future -> (index, sources)); on a crashed pool, rerun
    every unit that was in flight in isolation, in order, and restart the pool."""
    crashed: list = []
    ready, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
    for fut in ready:
        u, unit = pending.pop(fut)
        try:
            s = fut.result()
        except cf.process.BrokenProcessPool:
            crashed.append((u, unit))
            continue
        _finished(summaries, prog, u, s)
    if not crashed:
        return
    # Every unit in flight died with the pool: collect them all, rerun each in isolation.
    for fut in list(pending):
        crashed.append(pending.pop(fut))
    pool.close()
    for u, unit in sorted(crashed, key=lambda x: x[0]):
        s = run_isolated(encode_unit, (u, unit, ucfg, work), marker=_marker(work, u),
                         names=[src.path for src in unit], label=f"unit {u}", log=log)
        _finished(summaries, prog, u, s)
    pool.restart()
