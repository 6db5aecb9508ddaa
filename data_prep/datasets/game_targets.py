"""The ownership and score targets of a split's rows, from its games table, once asked
(:meth:`DatasetSplit.with_targets <kifunet.data_prep.datasets.dataset_base.DatasetSplit.with_targets>`).

Per row, picked by ``game_index`` and seen from the player to move (``to_move``), as the planes are:

====================  ========  ===========================================================================
key                   dtype     value
====================  ========  ===========================================================================
``ownership``         int8      [N, N]: +1 the player to move owns the point at the game's end, -1 the
                                opponent, 0 nobody; in the row's symmetry (the stored ``symmetry`` column's,
                                then the batch's), like the planes and the move target
``ownership_source``  int8      :data:`kifunet.data_prep.rules.final_ownership.SOURCES` code; 0 (``none``):
                                no ownership target (mask it)
``score``             float32   the final margin in points for the player to move; NaN: no score target
====================  ========  ===========================================================================

A score target is known for a game counted to a margin (``result_kind`` ``score``) that the board can make:
``|margin| <= N*N + |komi|`` (every point one side's, plus komi; :func:`score_known`). Records hold margins no game
can reach (KGS has ``B+8194.00`` after 69 moves): their value target stands, their score target is masked, and
``kifunet stats`` counts them.

A games table written before the ownership columns gives source 0 to every game; the score comes from its
``result_kind``, ``winner`` and ``margin``, which every table has.
"""

from __future__ import annotations

import h5py
import numpy as np

from .. import results
from .. import symmetries as sym
from ..game import BLACK
from ..rules import final_ownership
from .shards import GAME_OWNERSHIP

KEYS = ("ownership", "ownership_source", "score")


def games_table_targets(path: str, board_size: int) -> dict[str, np.ndarray]:
    """Per game of the table at ``path``: ``ownership`` int8 [G, N*N] and ``score`` float32 [G] from black's view,
    ``ownership_source`` int8 [G]. Raises ``OSError``/``KeyError`` as h5py does for a damaged file."""
    nn = int(board_size) ** 2
    with h5py.File(path, "r") as f:
        kind, winner, margin = f["result_kind"][()], f["winner"][()], f["margin"][()]
        komi = f["komi"][()] if "komi" in f else None
        g = int(kind.shape[0])
        if GAME_OWNERSHIP in f and "ownership_source" in f:
            own, src = f[GAME_OWNERSHIP][()], f["ownership_source"][()]
        else:  # written before the targets: every ownership masked
            own, src = np.zeros((g, nn), np.int8), np.zeros(g, np.int8)
    known = score_known(kind, margin, komi, board_size)
    score = np.where(known, np.where(winner == BLACK, margin, -margin), np.nan).astype(np.float32)
    return {"ownership": own.astype(np.int8).reshape(g, nn), "ownership_source": src.astype(np.int8),
            "score": score}


def score_known(kind, margin, komi, board_size: int) -> np.ndarray:
    """bool per game: counted to a margin (kind ``score``) with ``|margin| <= N*N + |komi|`` (an unknown komi, NaN
    or ``komi=None`` for a table without the column, counts 0), the games with a score target."""
    margin = np.abs(np.asarray(margin, np.float64))
    komi = np.nan_to_num(np.abs(np.asarray(0.0 if komi is None else komi, np.float64)))
    with np.errstate(invalid="ignore"):
        fits = margin <= int(board_size) ** 2 + komi
    return (np.asarray(kind) == results.KIND_CODES["score"]) & fits


def rows_of(per_game: dict[str, np.ndarray], cols: dict[str, np.ndarray], board_size: int) -> dict[str, np.ndarray]:
    """The targets (module docstring) of rows with columns ``cols`` (``game_index``, ``to_move``, and
    ``symmetry`` when the dataset stores it), before any batch symmetry."""
    idx = np.asarray(cols["game_index"], np.int64)
    n = int(board_size)
    side = np.where(np.asarray(cols["to_move"]) == BLACK, 1, -1).astype(np.int8)
    own = (per_game["ownership"][idx] * side[:, None]).reshape(-1, n, n).astype(np.int8)
    if "symmetry" in cols:
        own = apply(own, cols["symmetry"])
    return {"ownership": own, "ownership_source": per_game["ownership_source"][idx],
            "score": (per_game["score"][idx] * side).astype(np.float32)}


def apply(ownership: np.ndarray, symmetries) -> np.ndarray:
    """int8 [B, N, N] ownership under one symmetry per row (the transform of the planes)."""
    s = np.asarray(symmetries, np.int64).reshape(-1)
    return sym.apply_planes_batch(ownership[..., None], s)[..., 0]


def masked(rows: int, board_size: int) -> dict[str, np.ndarray]:
    """Targets of ``rows`` rows with nothing known (every target masked)."""
    n = int(board_size)
    return {"ownership": np.zeros((rows, n, n), np.int8), "ownership_source": np.zeros(rows, np.int8),
            "score": np.full(rows, np.nan, np.float32)}
