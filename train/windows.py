"""Windows: a list of dataset blocks -> one shuffled, augmented window of rows (a grain ``random_map``).

:class:`WindowBuilder` ``(blocks, rng) -> window``: per-row arrays (``target`` moved by the row's symmetry,
``to_move``, ``player_rank``, ``outcome``, ``weight``, ``index``, ``symmetry``, ``history_level``, optional
``profile`` and ``dataset``) plus ``idx`` and ``table`` (the ``codes`` layout) or ``planes``, and ``ownership``
(moved by the row's symmetry), ``ownership_source`` and ``score`` when the blocks carry them; the same ``rng`` gives
the same window. Encoding and history dropout: docs/training.md (Input pipeline)."""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from kifunet.data_prep import profiles
from kifunet.data_prep import symmetries as sym_mod
from kifunet.data_prep.results import OUTCOME_UNKNOWN
from kifunet.data_prep.datasets.dataset_base import DatasetMismatch
from kifunet.train.configs import ConfigError

#: GoNN write.exe's conditional keep probabilities of the previous-move planes 1..5 back.
GONN_KEEP_PROBS = (0.90, 0.95, 0.95, 0.98, 0.98)
SYMMETRY_MODES = ("example", "batch", "none")
HISTORY_MODES = ("none", "all", "cascade")


# ------------------------------------------------------------------------------------------------------------
# feature-set layout


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where each output channel of a feature set comes from."""

    num_planes: int
    num_stored: int
    stored_out: np.ndarray  # [num_stored] output channel of each stored channel
    const_out: np.ndarray  # [num_const] output channels of the constant planes, in feature order
    const_features: tuple  # (Feature, ...) constant features in order
    history: tuple  # ((channels of depth 1), (depth 2), ...): the features' declared history groups

    @property
    def history_depth(self) -> int:
        return len(self.history)


def layout_for(fs) -> Layout:
    """The :class:`Layout` of a feature set; history groups are what its features declare
    (:meth:`kifunet.data_prep.planes.features.FeatureSet.history_channels`)."""
    stored_out, const_out, consts = [], [], []
    for f, dst in zip(fs.features, fs.offsets()):
        if f.constant:
            const_out.extend(range(dst, dst + f.planes))
            consts.append(f)
        else:
            stored_out.extend(range(dst, dst + f.planes))
    return Layout(num_planes=fs.num_planes, num_stored=fs.num_stored,
                  stored_out=np.asarray(stored_out, np.intp), const_out=np.asarray(const_out, np.intp),
                  const_features=tuple(consts), history=fs.history_channels())


# ------------------------------------------------------------------------------------------------------------
# windows


def _apply_symmetries(x: np.ndarray, s: np.ndarray | None) -> np.ndarray:
    """Rows of ``x[R, N, N, ...]`` transformed by per-row symmetries ``s[R]`` (grouped by symmetry)."""
    if s is None:
        return x
    codes = x.ndim == 3  # [R, N, N] point codes: give them a channel axis
    out = np.empty_like(x)
    for k in range(sym_mod.NUM_SYMMETRIES):
        rows = np.flatnonzero(s == k)
        if rows.size:
            part = x[rows]
            if k:
                part = sym_mod.apply_planes(part[..., None], k)[..., 0] if codes else sym_mod.apply_planes(part, k)
            out[rows] = part
    return out


@njit(cache=True)
def _gather_codes(codes, order, s, table, inv, nv, out):
    """out[i, p] = codes[order[i], table[s[i], p]] * nv + inv[i]: row permutation, symmetry (a gather over
    the points with ``symmetries.source_table``) and row variant, in one pass."""
    r, npts = out.shape
    for i in range(r):
        src = order[i]
        t = s[i]
        base = inv[i]
        for p in range(npts):
            out[i, p] = codes[src, table[t, p]] * nv + base


def history_levels(rng: np.random.Generator, rows: int, depth: int, mode: str, p: float,
                   keep_probs) -> np.ndarray | None:
    """Per-row number of history depths kept (0..depth), or None when nothing is dropped."""
    if depth == 0 or mode == "none":
        return None
    if mode == "all":
        if p <= 0.0:
            return None
        return np.where(rng.random(rows) < p, 0, depth).astype(np.int8)
    if mode == "cascade":
        probs = np.ones(depth)
        kp = np.asarray(keep_probs, np.float64)[:depth]
        probs[: len(kp)] = kp
        kept = np.cumprod(rng.random((rows, depth)) < probs[None, :], axis=1)
        return kept.sum(axis=1).astype(np.int8)
    raise ConfigError(f"history dropout mode must be one of {HISTORY_MODES}, got {mode!r}")


class WindowBuilder:
    """grain ``random_map`` transform: a list of blocks -> one window. ``shuffle=False``, ``symmetry='none'``,
    ``history='none'`` and ``pad_to`` give evaluation windows."""

    def __init__(self, feature_name: str, board_size: int, batch_size: int, *, symmetry: str = "example",
                 history: str = "none", history_p: float = 0.0, keep_probs=GONN_KEEP_PROBS,
                 shuffle: bool = True, profile: bool = False, profile_fields: dict | None = None,
                 profile_dropout: float = 0.0):
        if symmetry not in SYMMETRY_MODES:
            raise ConfigError(f"symmetry must be one of {SYMMETRY_MODES}, got {symmetry!r}")
        if history not in HISTORY_MODES:
            raise ConfigError(f"history dropout must be one of {HISTORY_MODES}, got {history!r}")
        self.feature_name, self.n, self.batch_size = feature_name, int(board_size), int(batch_size)
        self.symmetry, self.history, self.history_p = symmetry, history, float(history_p)
        self.keep_probs = tuple(float(x) for x in keep_probs)
        self.shuffle = shuffle
        self.profile, self.profile_fields = bool(profile), dict(profile_fields or {})
        self.profile_dropout = float(profile_dropout)
        if not 0.0 <= self.profile_dropout <= 1.0:
            raise ConfigError(f"profile dropout must be a probability, got {profile_dropout}")
        self._fs = None
        self._layout = None

    @classmethod
    def for_training(cls, feature_name: str, board_size: int, batch_size: int, input_config, *,
                     profile: bool = False) -> "WindowBuilder":
        """The training windows ``input_config`` (``config.input``: ``symmetry``, ``history_dropout``,
        ``history_p``, ``history_keep_probs``, ``profile_dropout``) describes."""
        return cls(feature_name, board_size, batch_size, symmetry=input_config.symmetry,
                   history=input_config.history_dropout, history_p=input_config.history_p,
                   keep_probs=tuple(input_config.history_keep_probs), profile=profile,
                   profile_dropout=input_config.get("profile_dropout", 0.0))

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_fs"] = d["_layout"] = None
        return d

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            from kifunet.data_prep.planes import features

            self._fs = features.get(self.feature_name)
            self._layout = layout_for(self._fs)
        return self._layout

    def __call__(self, blocks: list[dict], rng: np.random.Generator) -> dict:
        return self.build(blocks, rng)

    def build(self, blocks: list[dict], rng: np.random.Generator | None, pad_to: int = 0) -> dict:
        lay, n, bsz = self.layout, self.n, self.batch_size
        total = sum(len(b["columns"]["target"]) for b in blocks)
        if self.shuffle:
            keep = (total // bsz) * bsz
            order = rng.permutation(total)[:keep]
        else:
            keep = total
            order = None
        rows_out = max(keep, pad_to)
        # the columns every block has (blocks of a mixture's datasets may differ in a container's own ones)
        cols = {k: np.concatenate([b["columns"][k] for b in blocks]) for k in blocks[0]["columns"]
                if all(k in b["columns"] for b in blocks)}
        if order is not None:
            cols = {k: v[order] for k, v in cols.items()}
        if self.symmetry == "example":
            s = rng.integers(0, 8, keep)
        elif self.symmetry == "batch":
            s = np.repeat(rng.integers(0, 8, max(1, keep // bsz)), bsz)[:keep]
        else:
            s = None
        level = history_levels(rng, keep, lay.history_depth, self.history, self.history_p, self.keep_probs)
        target = cols["target"].astype(np.int64)
        if s is not None:
            target = sym_mod.apply_index_batch(target, s, n)
        # the game's result for the mover: a symmetry changes neither the game nor the mover
        outcome = cols["outcome"] if "outcome" in cols else np.full(keep, OUTCOME_UNKNOWN, np.int8)
        out = {"target": target.astype(np.int16), "to_move": cols["to_move"].astype(np.int8),
               "player_rank": cols["player_rank"].astype(np.int8), "outcome": outcome.astype(np.int8),
               "weight": np.ones(keep, np.uint8),
               # for inspection and tests: the row of the split, its symmetry and history depth kept
               "index": cols["index"], "symmetry": np.zeros(keep, np.int8) if s is None else s.astype(np.int8),
               "history_level": (np.full(keep, lay.history_depth, np.int8) if level is None else level)}
        if "dataset" in cols:  # a mixture's blocks (kifunet.train.mixture): the row's dataset
            out["dataset"] = cols["dataset"].astype(np.int8)
        if self.profile:
            out["profile"] = self._profiles(cols, rng)
        if "ownership" in cols:  # a split read with its targets: the ownership turns with the planes
            out["ownership"] = _apply_symmetries(cols["ownership"], s)
            out["ownership_source"], out["score"] = cols["ownership_source"], cols["score"]
        if all("codes" in b for b in blocks):
            self._encode_codes(blocks, order, s, level, cols, out)
        else:
            self._encode_planes(blocks, order, s, level, cols, out)
        if rows_out > keep:  # padding rows (evaluation): weight 0
            for k, v in out.items():
                if k == "table":
                    continue
                pad = np.zeros((rows_out - keep,) + v.shape[1:], v.dtype)
                out[k] = np.concatenate([v, pad])
        return out

    def _profiles(self, cols: dict, rng: np.random.Generator | None) -> np.ndarray:
        """float32 ``[R, 46]``: each row's profile (:func:`kifunet.data_prep.profiles.encode_rows` of its ranks
        and its game's fields), the fields of ``profile_fields`` forced on every row, then (training, with a
        generator) each field but the handicap made unknown with probability ``profile_dropout``."""
        missing = [k for k in profiles.GAME_FIELDS if k not in cols]
        if missing:
            raise DatasetMismatch(f"a profiled net needs the rows' game fields ({', '.join(missing)} missing): open the "
                             f"split with profile=True")
        v = profiles.encode_rows(cols["player_rank"], cols["opponent_rank"],
                                 *(cols[k] for k in profiles.GAME_FIELDS))
        v = profiles.override_rows(v, self.profile_fields)
        if rng is not None and self.profile_dropout > 0.0:
            unknown = profiles.encode(profiles.UNKNOWN_PROFILE)
            for name, sl in profiles.FIELD_SLICES.items():
                if name == "handicap":  # always known (no HA: an even game); it has no unknown flag
                    continue
                drop = rng.random(len(v)) < self.profile_dropout
                v[drop, sl] = unknown[sl]
        return v

    def _variants(self, cols: dict, level: np.ndarray | None, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct row variants (constant planes + history level) ``[V, Cc + 1]`` and each row's variant."""
        lay = self.layout
        parts = [np.asarray(f.fn(cols[f.column]), np.uint8).reshape(rows, f.planes) for f in lay.const_features]
        parts.append((np.full(rows, lay.history_depth, np.uint8) if level is None else level.astype(np.uint8))[:, None])
        keys = np.concatenate(parts, axis=1)
        if keys.shape[1] <= 7:  # one int64 per row: a 1-D unique (a structured-row unique sorts 5x slower)
            code = np.zeros(rows, np.int64)
            for j in range(keys.shape[1]):
                code = (code << 8) | keys[:, j]
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            return keys[first], inv.reshape(-1)
        packed = np.packbits(keys[:, :-1], axis=1)
        if packed.shape[1] <= 7:
            code = np.zeros(rows, np.int64)
            for j in range(packed.shape[1]):
                code = (code << 8) | packed[:, j]
            code = (code << 8) | keys[:, -1]
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            return keys[first], inv.reshape(-1)
        variants, inv = np.unique(keys, axis=0, return_inverse=True)
        return variants, inv.reshape(-1)

    def _encode_codes(self, blocks, order, s, level, cols, out) -> None:
        lay = self.layout
        tables, shard_off = [], {}
        k_tot = 0
        for b in blocks:  # a code table per (dataset of a mixture, shard): shard numbers repeat across datasets
            key = (b.get("dataset", 0), b["shard"])
            if key not in shard_off:
                shard_off[key] = k_tot
                tables.append(b["table"])
                k_tot += len(b["table"])
        rows = len(cols["target"])
        variants, inv = self._variants(cols, level, rows)
        nv = len(variants)
        dtype = np.uint16 if k_tot * nv <= 65536 else np.int32
        total = sum(len(b["codes"]) for b in blocks)
        codes = np.empty((total,) + blocks[0]["codes"].shape[1:], dtype)
        a = 0
        for b in blocks:
            c = codes[a:a + len(b["codes"])]
            c[...] = b["codes"]
            off = shard_off[(b.get("dataset", 0), b["shard"])]
            if off:
                c += dtype(off)
            a += len(b["codes"])
        n = self.n
        r = len(inv)
        out_codes = np.empty((r, n * n), dtype)
        _gather_codes(codes.reshape(total, n * n), np.arange(r) if order is None else order,
                      np.zeros(r, np.int64) if s is None else s.astype(np.int64),
                      sym_mod.source_table(n)[:, : n * n].astype(np.int64), inv.astype(np.int64), nv, out_codes)
        codes = out_codes.reshape(r, n, n)
        table = np.zeros((k_tot, nv, lay.num_planes), np.uint8)
        stored = np.concatenate(tables) if tables else np.zeros((0, lay.num_stored), np.uint8)
        table[:, :, lay.stored_out] = stored[:, None, :]
        if len(lay.const_out):
            table[:, :, lay.const_out] = variants[None, :, :-1]
        for v in range(nv):
            for d in range(int(variants[v, -1]), lay.history_depth):
                table[:, v, list(lay.history[d])] = 0
        out["idx"] = codes
        out["table"] = table.reshape(k_tot * nv, lay.num_planes)

    def _encode_planes(self, blocks, order, s, level, cols, out) -> None:
        lay = self.layout
        parts = []
        for b in blocks:
            if "codes" in b:
                parts.append(np.take(b["table"], b["codes"], axis=0))
            else:
                parts.append(b["stored"])
        stored = np.concatenate(parts)
        if order is not None:
            stored = stored[order]
        stored = _apply_symmetries(stored, s)
        planes = self._fs.assemble(stored, cols)
        if level is not None:
            for d in range(lay.history_depth):
                rows = np.flatnonzero(level <= d)
                for c in lay.history[d] if rows.size else ():
                    planes[rows, :, :, c] = 0
        out["planes"] = planes
