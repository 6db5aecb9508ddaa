"""Legal moves: the top-k legal moves of a policy output (:func:`top_moves`), and legal-move masks for dataset rows
(:class:`LegalMasker`): read off the planes when the feature set carries legality, else replayed.

:class:`ReplayLegality` finds each row's game through the games table (``game_index`` -> ``path``: an ``.sgf`` file
or ``ARCHIVE!MEMBER``, each archive streamed once), replays it with the build's rules and takes ``legal`` at
``move_number - 1``; a ``symmetry`` column transforms the mask. Masks are kept bit-packed per game. Importing this
module loads NumPy only.
"""

from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from kifunet.data_prep.datasets.dataset_base import DatasetMismatch


def top_moves(probs, allowed, k: int) -> list[int]:
    """The flat indices of the ``k`` allowed moves of highest probability, most probable first.

    ``probs``: float ``[M]`` (a policy output, ``M = N*N + 1`` with pass last, or ``N*N`` for the points only);
    ``allowed``: bool ``[M]``, the moves that may be listed (pass is listed when ``allowed[N*N]`` is set). Ties go
    to the lower flat index; fewer than ``k`` moves when fewer are allowed; ``[]`` for ``k <= 0``."""
    p = np.asarray(probs)
    ok = np.asarray(allowed, dtype=bool)
    if p.shape != ok.shape or p.ndim != 1:
        raise ValueError(f"top_moves needs probabilities and an allowed mask of one shape [M], not {p.shape} and "
                         f"{ok.shape}")
    if k <= 0:
        return []
    order = np.argsort(-p, kind="stable")
    return [int(m) for m in order[ok[order]][:k]]


class ReplayLegality:
    """Legality of a split's rows by replaying their games (see the module docstring)."""

    def __init__(self, reader, game_indices=None):
        self.reader = reader
        self.n = reader.board_size
        games = reader.games()
        self.paths = [str(p) for p in games["path"]]
        self._packed: dict[int, np.ndarray] = {}
        wanted = range(len(self.paths)) if game_indices is None else sorted({int(g) for g in game_indices})
        self._load(list(wanted))

    def _load(self, wanted: list[int]) -> None:
        from kifunet.data_prep.sgf import inputs, sgf_io
        from kifunet.data_prep.planes import replay

        by_top: dict[str, dict[str, int]] = defaultdict(dict)
        for g in wanted:
            path = self.paths[g]
            by_top[inputs.source_file(path)][path] = g  # the archive or SGF file (a collection's FILE#k too)
        for top, members in by_top.items():
            if list(members) == [top] and inputs.archive_kind(top) is None:  # a plain single-game SGF file
                self._store(members[top], replay.load(top, path=top))
                continue
            if not os.path.exists(top):
                raise FileNotFoundError(f"legal mask by replay needs the build's input {top!r}, which is not there")
            found = 0
            for src in inputs.iter_sources([top]):
                g = members.get(src.path)
                if g is None or src.data is None:
                    continue
                self._store(g, sgf_io.load_game(src.data, path=src.path))
                found += 1
                if found == len(members):
                    break
            if found < len(members):
                missing = sorted(set(members) - {self.paths[g] for g in self._packed})
                raise FileNotFoundError(f"{len(missing)} games not found in {top!r}, e.g. {missing[0]!r}")

    def _store(self, g: int, record) -> None:
        from kifunet.data_prep.rules import analysis
        from kifunet.data_prep.planes import replay

        a = replay.analyse_game(record, flags=analysis.F_LIBS_AFTER_PLA)
        self._packed[g] = np.packbits(a.legal.astype(bool), axis=1)

    def mask(self, batch: dict) -> np.ndarray:
        """bool ``[B, N*N + 1]`` for a reader batch (needs ``game_index`` and ``move_number``)."""
        nn = self.n * self.n
        gi = np.asarray(batch["game_index"], dtype=np.int64)
        mn = np.asarray(batch["move_number"], dtype=np.int64)
        out = np.ones((gi.size, nn + 1), dtype=bool)
        for i, (g, m) in enumerate(zip(gi.tolist(), mn.tolist())):
            if g not in self._packed:
                self._load([g])
            out[i, :nn] = np.unpackbits(self._packed[g][m - 1], count=nn).astype(bool)
        if "symmetry" in batch:
            from kifunet.data_prep import symmetries

            board = out[:, :nn].reshape(-1, self.n, self.n, 1)
            out[:, :nn] = symmetries.apply_planes_batch(board, batch["symmetry"]).reshape(-1, nn)
        return out


class LegalMasker:
    """Planes first, replay when the feature set has no legality planes."""

    def __init__(self, reader):
        from kifunet.eval.metrics import legal_from_planes

        self.reader = reader
        self.fs = reader.feature_set
        probe = legal_from_planes(np.zeros((1, reader.board_size, reader.board_size, self.fs.num_planes), np.uint8),
                                  self.fs)
        self.source = "planes" if probe is not None else "replay"
        if self.source == "replay" and not hasattr(reader, "games"):
            raise DatasetMismatch(f"{reader.root}: {self.fs.name} has no legality planes and this dataset no games table "
                             "to replay (a TFDS split); use the HDF5 build for --legal-mask")
        self._replay = None

    def __call__(self, batch: dict) -> np.ndarray:
        if self.source == "planes":
            from kifunet.eval.metrics import legal_from_planes

            return legal_from_planes(batch["planes"], self.fs)
        if self._replay is None:
            self._replay = ReplayLegality(self.reader)
        return self._replay.mask(batch)
