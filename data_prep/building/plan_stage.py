"""Build stage 2, plan (main process): the encoded units -> accounting, games tables and each shard's rows.

:func:`plan` reads the units' game dicts in order: duplicates (``game_id``; the first copy that passed every
filter wins) are dropped, every record is counted (``seen = used + filtered{reason} + rejected{reason}``,
positions by move filter, used games and positions by result kind), each game not used gets a line in
``WORK/rejects.jsonl.part``, and each split gets its games table and per-unit spill rows.

:func:`shard_tasks` permutes a split's positions with :func:`split_rng` (across games and shards) and cuts them
into shards of at most ``shard_rows`` rows (:func:`shard_sizes`) for
:func:`kifunet.data_prep.building.write_stage.write_one_shard`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter

import numpy as np

from ..datasets import shards as shards_mod
from .encode_stage import read_unit, unit_game_column
from ..results import KINDS


def result_counts() -> dict[str, dict[str, int]]:
    """Zero counts by result kind, every kind of :data:`kifunet.data_prep.results.KINDS` in order:
    ``{kind: {"games": 0, "positions": 0}}``; filled, games sum to ``used`` and positions to ``positions.kept``."""
    return {k: {"games": 0, "positions": 0} for k in KINDS}


def add_result(counts: dict, g: dict) -> None:
    """Count used game ``g`` (its encode-stage dict: ``result_kind`` code, ``positions``) in
    :func:`result_counts` ``counts``."""
    c = counts[KINDS[g["result_kind"]]]
    c["games"] += 1
    c["positions"] += g["positions"]


def reject_line(g: dict) -> dict:
    """The ``rejects.jsonl`` line of a game not used (its game dict from the encode stage)."""
    line = {"path": g["path"], "status": g["status"], "reason": g["reason"]}
    for k in ("detail", "move_number", "move", "colour"):
        if g.get(k) not in (None, ""):
            line[k] = g[k]
    return line


def plan(work: str, summaries: list[dict], split_names: list[str], infos: list, *, dedupe: bool):
    """Dedupe, games tables, per-split row lists, accounting; writes the rejects log to ``work/``.

    Returns ``(per_split, accounting)``: per split, ``games`` (the games table's rows), ``units`` ({unit: (its
    rows in the split, record index -> game index)}), ``positions``, ``rows`` and ``results``
    (:func:`result_counts`); ``accounting`` is the manifest's ``counts``."""
    seen_games: dict[str, str] = {}  # game_id -> path of the copy kept
    counts = {"seen": 0, "used": 0, "filtered": Counter(), "rejected": Counter()}
    pos = {"moves": 0, "kept": 0, "filtered": Counter()}
    per_split = {s: {"games": [], "units": {}, "positions": 0, "rows": 0, "results": result_counts()}
                 for s in split_names}
    results = result_counts()
    examples: dict[str, list[str]] = {}
    with open(os.path.join(work, "rejects.jsonl.part"), "w", encoding="utf-8", errors="backslashreplace") as rejects:
        for s in summaries:
            u = s["unit"]
            _, games = read_unit(work, u)
            kept: dict[str, list[np.ndarray]] = {}
            gmaps: dict[str, np.ndarray] = {}
            game_col = None
            for i, g in enumerate(games):
                counts["seen"] += 1
                if g["status"] == "ok" and dedupe:
                    first = seen_games.get(g["game_id"])
                    if first is not None:
                        g["status"], g["reason"], g["detail"] = "filtered", "duplicate", f"same game as {first}"
                    else:
                        seen_games[g["game_id"]] = g["path"]
                if g["status"] != "ok":
                    key = "filtered" if g["status"] == "filtered" else "rejected"
                    counts[key][g["reason"]] += 1
                    ex = examples.setdefault(f"{key}:{g['reason']}", [])
                    if len(ex) < 3:
                        ex.append(g["path"])
                    rejects.write(json.dumps(reject_line(g), ensure_ascii=False) + "\n")
                    continue
                counts["used"] += 1
                split = g["split"]
                sp = per_split[split]
                gmaps.setdefault(split, np.full(len(games), -1, np.int32))[i] = len(sp["games"])
                sp["games"].append({k: g.get(k) for k in
                                    shards_mod.GAME_STR_COLUMNS + tuple(shards_mod.GAME_NUM_COLUMNS)})
                sp["positions"] += g["positions"]
                sp["rows"] += g["rows"]
                add_result(sp["results"], g)
                add_result(results, g)
                pos["moves"] += g["pos_moves"]
                pos["kept"] += g["positions"]
                pos["filtered"].update(g["pos_filtered"])
                if game_col is None:
                    game_col = unit_game_column(work, u)
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
        "results": results,
        "examples": dict(sorted(examples.items())),
    }
    return per_split, accounting


def shard_sizes(n: int, shard_rows: int) -> list[int]:
    """``n`` rows cut into the fewest shards of at most ``shard_rows`` rows, sizes differing by at most one."""
    if n == 0:
        return []
    k = -(-n // shard_rows)
    base, extra = divmod(n, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


def split_rng(seed: int, split: str) -> np.random.Generator:
    """The generator of a split's shuffle: ``default_rng(SeedSequence([seed, sha256(split)[:8]]))``."""
    h = int.from_bytes(hashlib.sha256(split.encode()).digest()[:8], "big")
    return np.random.default_rng(np.random.SeedSequence([int(seed) & (2**63 - 1), h]))


def shard_tasks(cfg, work: str, split: str, sp: dict, fs):
    """The write tasks of one split (``sp``: its :func:`plan` entry), one per shard, in shard order.

    ``cfg``: the build's :class:`~kifunet.data_prep.building.build.BuildConfig` (``out``, ``seed``, ``shard_rows``,
    ``storage``, ``filters.board_size``, ``symmetries``)."""
    units = sorted(sp["units"])
    counts = np.array([len(sp["units"][u][0]) for u in units], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    n = int(offsets[-1])
    order = split_rng(cfg.seed, split).permutation(n)
    game_index = {str(u): sp["units"][u][1] for u in units}
    unit_arr = np.array(units, dtype=np.int64)
    a = 0
    for k, size in enumerate(shard_sizes(n, cfg.shard_rows)):
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
