"""Build stage 2, plan (main process): the encoded units -> accounting, games tables and each shard's rows.

:func:`plan` reads the units' game dicts in order, drops duplicates (``game_id``; the first copy that passed every
filter wins), counts every record (``seen = used + filtered{reason} + rejected{reason}``), writes a line per game
not used to ``WORK/rejects.jsonl.part``, and gives each split its games table and per-unit spill rows.
:func:`shard_tasks` permutes a split's positions with :func:`split_rng` and cuts them into shards of at most
``shard_rows`` rows (:func:`shard_sizes`) for :func:`kifunet.data_prep.building.write_stage.write_one_shard`.
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


@dataclasses.dataclass
class _Tally:
    """What :func:`plan` counts while it reads the units in order."""

    per_split: dict  # split -> games, units, positions, rows, results (see plan)
    dedupe: bool
    seen_games: dict = dataclasses.field(default_factory=dict)  # game_id -> path of the copy kept
    counts: dict = dataclasses.field(default_factory=lambda: {"seen": 0, "used": 0, "filtered": Counter(),
                                                              "rejected": Counter()})
    pos: dict = dataclasses.field(default_factory=lambda: {"moves": 0, "kept": 0, "filtered": Counter()})
    results: dict = dataclasses.field(default_factory=result_counts)
    examples: dict = dataclasses.field(default_factory=dict)  # "filtered:reason" -> up to 3 paths

    def check_duplicate(self, g: dict) -> None:
        """Mark a game that passed every filter ``filtered``/``duplicate`` when an earlier copy was kept."""
        if g["status"] == "ok" and self.dedupe:
            first = self.seen_games.get(g["game_id"])
            if first is not None:
                g["status"], g["reason"], g["detail"] = "filtered", "duplicate", f"same game as {first}"
            else:
                self.seen_games[g["game_id"]] = g["path"]

    def count_unused(self, g: dict, rejects) -> None:
        """Count a game filtered or rejected, keep up to 3 examples per reason, write its rejects line."""
        key = "filtered" if g["status"] == "filtered" else "rejected"
        self.counts[key][g["reason"]] += 1
        ex = self.examples.setdefault(f"{key}:{g['reason']}", [])
        if len(ex) < 3:
            ex.append(g["path"])
        rejects.write(json.dumps(reject_line(g), ensure_ascii=False) + "\n")

    def count_used(self, g: dict) -> dict:
        """Count a used game in its split (its games-table row appended) and overall; returns the split's dict."""
        self.counts["used"] += 1
        sp = self.per_split[g["split"]]
        sp["games"].append({k: g.get(k) for k in shards_mod.GAME_STR_COLUMNS + tuple(shards_mod.GAME_NUM_COLUMNS)
                            + (shards_mod.GAME_OWNERSHIP,)})
        sp["positions"] += g["positions"]
        sp["rows"] += g["rows"]
        add_result(sp["results"], g)
        add_result(self.results, g)
        self.pos["moves"] += g["pos_moves"]
        self.pos["kept"] += g["positions"]
        self.pos["filtered"].update(g["pos_filtered"])
        return sp

    def accounting(self) -> dict:
        """The manifest's ``counts``."""
        counts, pos = self.counts, self.pos
        return {
            "seen": counts["seen"], "used": counts["used"],
            "filtered": dict(sorted(counts["filtered"].items())), "rejected": dict(sorted(counts["rejected"].items())),
            "positions": {"moves": pos["moves"], "kept": pos["kept"],
                          "filtered": dict(sorted(pos["filtered"].items()))},
            "results": self.results,
            "examples": dict(sorted(self.examples.items())),
        }


def plan(work: str, summaries: list[dict], split_names: list[str], infos: list, *, dedupe: bool):
    """Dedupe, games tables, per-split row lists, accounting; writes the rejects log to ``work/``.

    Returns ``(per_split, accounting)``: per split, ``games`` (the games table's rows), ``units`` ({unit: (its
    rows in the split, record index -> game index)}), ``positions``, ``rows`` and ``results``
    (:func:`result_counts`); ``accounting`` is the manifest's ``counts``."""
    per_split = {s: {"games": [], "units": {}, "positions": 0, "rows": 0, "results": result_counts()}
                 for s in split_names}
    tally = _Tally(per_split, dedupe)
    with open(os.path.join(work, "rejects.jsonl.part"), "w", encoding="utf-8", errors="backslashreplace") as rejects:
        for s in summaries:
            _plan_unit(work, s["unit"], tally, rejects)
        for info in infos:
            for err in info.errors:
                rejects.write(json.dumps({"path": err["path"], "status": "input_error", "reason": err["reason"],
                                          "detail": err["detail"]}, ensure_ascii=False) + "\n")
    return per_split, tally.accounting()


def _plan_unit(work: str, u: int, tally: _Tally, rejects) -> None:
    """Count unit ``u``'s games in ``tally`` and give each split the unit's rows it keeps and its record index ->
    game index map."""
    _, games = read_unit(work, u)
    kept: dict[str, list[np.ndarray]] = {}
    gmaps: dict[str, np.ndarray] = {}
    game_col = None
    for i, g in enumerate(games):
        tally.counts["seen"] += 1
        tally.check_duplicate(g)
        if g["status"] != "ok":
            tally.count_unused(g, rejects)
            continue
        split = g["split"]
        gmaps.setdefault(split, np.full(len(games), -1, np.int32))[i] = len(tally.per_split[split]["games"])
        tally.count_used(g)
        if game_col is None:
            game_col = unit_game_column(work, u)
        a, b = np.searchsorted(game_col, [i, i + 1])  # a game's rows are consecutive in its unit
        kept.setdefault(split, []).append(np.arange(a, b, dtype=np.int32))
    for split, parts in kept.items():
        tally.per_split[split]["units"][u] = (np.concatenate(parts), gmaps[split])


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
