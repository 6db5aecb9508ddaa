"""The datasets of a training run, opened once (:class:`TrainData`): every split ``config`` names, as grain
sources of blocks, passed along to the input pipeline, the memory estimate and the evaluation."""

from __future__ import annotations

import dataclasses

import numpy as np

from kifunet.data_prep.datasets import dataset as dataset_mod
from kifunet.train import mixture


def open_blocks(root: str, split: str, *, block_rows: int = 0, add_planes: str = "", profile: bool = False,
                require_rows: bool = False, targets: bool = False):
    """One split of one dataset as a grain source of blocks of ``block_rows`` rows (0: the dataset's chunk rows),
    stored planes unassembled (:func:`kifunet.data_prep.datasets.dataset.open_split` for the other arguments)."""
    split_ = dataset_mod.open_split(root, split, assemble=False, require_rows=require_rows, add_planes=add_planes,
                                    profile=profile, targets=targets)
    return split_.blocks(block_rows)


@dataclasses.dataclass(frozen=True, eq=False)
class TrainData:
    """The opened datasets of a run: ``roots`` (``config.dataset``'s order; the first is the reference),
    ``train`` and ``evals`` (block sources), ``weights`` (training-row shares, summing to 1), ``profile``."""

    roots: tuple
    train: tuple
    evals: tuple
    weights: np.ndarray
    profile: bool = False
    targets: bool = False

    @classmethod
    def open(cls, config) -> "TrainData":
        """The datasets ``config`` names, with ``config.input``'s planes and the rows' profiles for a profiled net.
        ``EmptySplitError`` for a training split without rows, ``ValueError`` (one line) for datasets that cannot be
        mixed or bad mixing weights."""
        from kifunet.train.batches import wants_targets

        data = cls.open_datasets(config.dataset, config.train_split, config.input, eval_split=config.eval_split,
                                 profile=bool(config.model.get("profile_embedding")), targets=wants_targets(config))
        if float(config.get("ownership_weight", 0.0)) > 0:
            data.check_ownership_targets()
        return data

    def check_ownership_targets(self) -> None:
        """``ConfigError`` (one line) naming the first dataset without ownership targets for an ownership head to
        learn from: built with ``kifunet build --no-targets``, or before the targets (manifest version 1)."""
        from kifunet.data_prep.datasets.manifest import missing_ownership_targets
        from kifunet.train.configs import ConfigError

        for root, blocks in zip(self.roots, self.train):
            m = getattr(blocks.split, "manifest", None)
            why = missing_ownership_targets(m) if m else ""
            if why:
                raise ConfigError(f"ownership_weight > 0, but {root} {why}: it has no ownership targets (build it "
                                  f"again without --no-targets, or set ownership_weight=0)")

    @classmethod
    def open_datasets(cls, spec: str, split: str, input_config, *, eval_split: str = "",
                      profile: bool = False, targets: bool = False) -> "TrainData":
        """``spec``'s ``split`` for training and ``eval_split`` (``""``: none) for evaluation, read as
        ``input_config`` (``config.input``) says."""
        roots = mixture.split_datasets(spec)
        roots = tuple(roots if len(roots) > 1 else [spec])
        add = input_config.add_planes
        train = tuple(open_blocks(r, split, block_rows=input_config.block_rows, add_planes=add, profile=profile,
                                  require_rows=True, targets=targets) for r in roots)
        if len(roots) > 1:
            mixture.check_compatible([(r, b.split) for r, b in zip(roots, train)])
        weights = mixture.row_weights(input_config.get("mix_weights", "") if len(roots) > 1 else "",
                                      [b.num_rows() for b in train])
        evals = tuple(open_blocks(r, eval_split, add_planes=add, profile=profile, targets=targets)
                      for r in roots) if eval_split else ()
        return cls(roots, train, evals, weights, profile, targets)

    @property
    def mixed(self) -> bool:
        return len(self.roots) > 1

    def facts(self) -> dict:
        """The reference dataset's ``board_size``, ``features`` (name), ``num_planes`` and ``shards``, with
        ``rows`` the training rows of all datasets."""
        ref = self.train[0].split
        return {"rows": sum(b.num_rows() for b in self.train), "board_size": ref.board_size,
                "features": ref.feature_name, "num_planes": ref.num_planes, "shards": ref.num_shards}

    def block_rows(self) -> int:
        """The largest training block (rows): what the memory estimate counts a window in."""
        return max(b.block_rows for b in self.train)

    def mix_text(self) -> str:
        """`` (A: 1,000 rows, weight 0.500; B: ...)`` for a mixture, ``""`` for one dataset."""
        if not self.mixed:
            return ""
        return " (" + "; ".join(f"{r}: {b.num_rows():,} rows, weight {w:.3f}"
                                for r, b, w in zip(self.roots, self.train, self.weights)) + ")"

    def close(self) -> None:
        """Close the splits' open files (they reopen on the next read)."""
        for b in self.train + self.evals:
            b.split.close()


__all__ = ["TrainData", "open_blocks"]
