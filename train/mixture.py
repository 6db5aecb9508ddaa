"""Several built datasets as one training stream (``config.dataset = "A,B"``), mixed at the block level with a
fixed interleaving, so resume stays exact. The first dataset is the run's reference; all must agree on feature
set, board size, plane counts and stored-plane layout (:func:`check_compatible`)."""

from __future__ import annotations

import numpy as np

from kifunet.data_prep.datasets.dataset_base import DatasetMismatch
from kifunet.train.configs import ConfigError


def split_datasets(spec: str) -> list[str]:
    """The datasets a ``config.dataset`` names, in order (comma-separated; blanks dropped)."""
    return [p.strip() for p in str(spec or "").split(",") if p.strip()]


def dataset_seed(seed: int, k: int) -> int:
    """The shuffle seed of dataset ``k`` of a mixture (a 32-bit function of the run's seed and ``k``)."""
    return int(np.random.SeedSequence([int(seed) % (1 << 32), int(k)]).generate_state(1)[0])


def row_weights(mix_weights: str, rows: list[int]) -> np.ndarray:
    """Normalised row shares of the datasets: ``mix_weights`` (comma-separated positive numbers, one per dataset)
    or, when empty, proportional to ``rows``."""
    n = len(rows)
    if not str(mix_weights or "").strip():
        w = np.asarray(rows, np.float64)
    else:
        parts = [p.strip() for p in str(mix_weights).split(",")]
        try:
            w = np.asarray([float(p) for p in parts], np.float64)
        except ValueError:
            raise ConfigError(f"config.input.mix_weights={mix_weights!r}: give comma-separated numbers") from None
        if len(w) != n:
            raise ConfigError(f"config.input.mix_weights={mix_weights!r} has {len(w)} weight(s) for {n} datasets")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ConfigError(f"mixing weights must be positive (config.input.mix_weights={mix_weights!r}, rows {rows})")
    return w / w.sum()


def _facts(split) -> dict:
    storage = (getattr(split, "manifest", None) or {}).get("storage") or {}
    return {"feature set": f"{split.feature_name} v{split.feature_version}", "board size": split.board_size,
            "planes": split.num_planes, "stored planes": split.num_stored,
            "stored-plane layout": storage.get("planes", "stored")}


def check_compatible(splits: list) -> None:
    """Raise ``ValueError`` (one line: both paths and what differs) unless every split of ``splits`` (``(root,
    split)`` pairs, the split opened: :class:`kifunet.data_prep.datasets.dataset_base.DatasetSplit`) has the first
    one's feature set, board size, plane counts and stored-plane layout."""
    ref = None
    for root, split in splits:
        facts = _facts(split)
        if ref is None:
            ref = (root, facts)
            continue
        for key, v in facts.items():
            if v != ref[1][key]:
                raise DatasetMismatch(f"datasets {ref[0]} and {root} cannot be mixed: {key} {ref[1][key]} vs {v}")


class TagBlock:
    """grain map: a block of dataset ``k`` with a ``dataset`` key and an int8 ``dataset`` column (its rows)."""

    def __init__(self, k: int):
        self.k = int(k)

    def __call__(self, piece: dict) -> dict:
        cols = dict(piece["columns"])
        cols["dataset"] = np.full(len(cols["target"]), self.k, np.int8)
        return {**piece, "dataset": self.k, "columns": cols}


def mixed_blocks(sources: list, weights: np.ndarray, *, seed: int, process_index: int = 0, process_count: int = 1):
    """The infinite grain ``MapDataset`` of this host's blocks of all ``sources`` (grain sources of blocks, each
    with ``num_rows()``), mixed so that dataset ``k`` gives a share ``weights[k]`` of the rows."""
    import grain

    parts, block_w = [], []
    for k, src in enumerate(sources):
        ds = grain.MapDataset.source(src)
        if process_count > 1:
            ds = ds[process_index::process_count]
        parts.append(ds.shuffle(seed=dataset_seed(seed, k)).repeat(None).map(TagBlock(k)))
        block_w.append(float(weights[k]) * len(src) / src.num_rows())  # rows share / mean rows per block
    return grain.MapDataset.mix(parts, block_w)
