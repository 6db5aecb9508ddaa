"""The profile columns of a split's rows: the game fields (:data:`~kifunet.data_prep.profiles.GAME_FIELDS`) a split
gives once asked (:meth:`DatasetSplit.with_profile
<kifunet.data_prep.datasets.dataset_base.DatasetSplit.with_profile>`).

HDF5 builds keep them per game in the split's games table (``days``, ``source``, ``time_control``, ``handicap``,
``komi``), picked by a row's ``game_index``; a table without the first three gives days from ``date`` and
``year`` (:func:`kifunet.data_prep.profiles.days_of_dates`) and an unknown source and time control.
"""

from __future__ import annotations

import h5py
import numpy as np

from .. import profiles

#: the games-table (and TFDS feature) name of each game field
STORED_NAMES = {"game_days": "days", "game_source": "source", "game_time_control": "time_control",
                "game_handicap": "handicap", "game_komi": "komi"}


def games_table_fields(path: str) -> dict[str, np.ndarray]:
    """The :data:`~kifunet.data_prep.profiles.GAME_FIELDS` of every game of the games table at ``path`` (arrays
    indexed by ``game_index``). Raises ``OSError``/``KeyError`` as h5py does for a damaged file."""
    with h5py.File(path, "r") as f:
        n = int(f["handicap"].shape[0])
        handicap, komi = f["handicap"][()], f["komi"][()]
        if "days" in f:
            days = f["days"][()]
        else:  # written before the column: the date the table keeps
            dates = f["date"].asstr()[()] if n else np.zeros(0, object)
            days = profiles.days_of_dates(dates, f["year"][()])
        source = f["source"][()] if "source" in f else np.full(n, profiles.UNKNOWN_CODE, np.int8)
        time_control = (f["time_control"][()] if "time_control" in f
                        else np.full(n, profiles.UNKNOWN_CODE, np.int8))
    return profiles.game_field_rows(days, source, time_control, handicap, komi)


def rows_of(per_game: dict[str, np.ndarray], game_index: np.ndarray) -> dict[str, np.ndarray]:
    """The game fields of rows whose games are ``game_index`` (per-game arrays of :func:`games_table_fields`)."""
    idx = np.asarray(game_index, np.int64)
    return {k: per_game[k][idx] for k in profiles.GAME_FIELDS}
