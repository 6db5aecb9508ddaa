"""Who played this: a profiled net's likelihood of whole games' moves under candidate profiles, and how often the
likeliest candidate is the true one given the moves of 1, 5 or 10 games.

:func:`game_nll` sums ``-log p(played move)`` over each game's rows under each candidate (hidden fields set to
unknown, the others kept); :func:`source_labels` and :func:`year_labels` give each game's true candidate (-1: none);
:func:`accuracy` guesses the candidate with the least summed NLL over n games of one label, ties to the first.
Games are found through the split's ``game_index`` column (HDF5 builds). The terms: docs/profiles.md ("The joint
experiment").
"""

from __future__ import annotations

import numpy as np

from kifunet.data_prep import profiles
from kifunet.eval import metrics as M


def hide_rows(vectors: np.ndarray, hide) -> np.ndarray:
    """``vectors`` ``[R, SIZE]`` with the fields named in ``hide`` set to the unknown encoding on every row."""
    if not hide:
        return vectors
    unknown = profiles.encode(profiles.Profile())
    out = np.array(vectors, np.float32, copy=True)
    for name in hide:
        out[:, profiles.FIELD_SLICES[name]] = unknown[profiles.FIELD_SLICES[name]]
    return out


def row_profiles(batch: dict) -> np.ndarray:
    """The profile vectors of a reader batch read with ``with_profile(True)`` (each row's own fields)."""
    return profiles.encode_rows(batch["player_rank"], batch["opponent_rank"],
                                *(batch[k] for k in profiles.GAME_FIELDS))


def game_nll(predictor, reader, games: np.ndarray, candidates: list[dict], *, hide=(),
             batch_size: int = 256) -> np.ndarray:
    """``[len(games), len(candidates)]``: each game's NLL (module table) under each candidate, over all the rows of
    the split whose ``game_index`` is in ``games``. ``predictor`` must read a profile (a profiled net)."""
    if not predictor.reads_profile:
        raise ValueError("this net has no profile input (trained with model.profile_embedding 0): every candidate "
                         "would give the same likelihood")
    games = np.asarray(games, np.int64)
    col = np.asarray(reader.column("game_index"), np.int64)
    rows = np.flatnonzero(np.isin(col, games))
    order = np.argsort(games, kind="stable")
    slot = order[np.searchsorted(games[order], col[rows])]  # each row's place in ``games``
    reader.with_profile(True)
    out = np.zeros((len(games), len(candidates)), np.float64)
    for a in range(0, len(rows), batch_size):
        idx = rows[a:a + batch_size]
        batch = reader.batch(idx)
        base = hide_rows(row_profiles(batch), hide)
        target = batch["target"].astype(np.int64)
        for k, cand in enumerate(candidates):
            logits, _ = predictor.predict_with_value(dict(batch, profile=profiles.override_rows(base, cand)),
                                                     pad_to=batch_size)
            _, nll = M.example_stats(logits, target)
            np.add.at(out[:, k], slot[a:a + batch_size], nll)
    return out


def game_fields(reader) -> dict[str, np.ndarray]:
    """Per game of the split (``game_index`` order): ``source`` codes and ``days``, from its games table."""
    g = reader.profile_games()
    return {"source": np.asarray(g["game_source"]), "days": np.asarray(g["game_days"])}


def source_labels(codes: np.ndarray, candidates: list[dict]) -> np.ndarray:
    """The candidate index of each game's source code (-1: unknown, or a source no candidate names)."""
    names = [c["source"] for c in candidates]
    return np.asarray([names.index(profiles.SOURCES[c]) if 0 <= c < len(profiles.SOURCES)
                       and profiles.SOURCES[c] in names else -1 for c in np.asarray(codes)], np.int64)


def year_labels(days: np.ndarray, candidates: list[dict]) -> np.ndarray:
    """The candidate index of the year nearest each game's date (-1: unknown date)."""
    days = np.asarray(days, np.int64)
    cand = np.asarray([c["date"] for c in candidates], np.int64)
    lab = np.abs(days[:, None] - cand[None, :]).argmin(axis=1)
    return np.where(days == profiles.UNKNOWN_DAYS, -1, lab)


def pick_games(labels: np.ndarray, per_label: int, seed: int = 0) -> np.ndarray:
    """Up to ``per_label`` game indices of each label (>= 0), drawn at random, sorted."""
    rng = np.random.default_rng(seed)
    out = [rng.permutation(np.flatnonzero(labels == k))[:per_label] for k in np.unique(labels[labels >= 0])]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, np.int64)


def accuracy(nll: np.ndarray, labels: np.ndarray, n: int, *, trials: int = 1000, seed: int = 0) -> dict:
    """How often the least summed NLL of ``n`` distinct games of one label names that label (module table): each
    trial draws a label among those with at least ``n`` games, then ``n`` of its games."""
    nll, labels = np.asarray(nll, np.float64), np.asarray(labels, np.int64)
    rng = np.random.default_rng(seed)
    usable = [k for k in np.unique(labels[labels >= 0]) if np.sum(labels == k) >= n]
    if not usable:
        return {"n_games": n, "trials": 0, "correct": 0, "accuracy": None, "labels": []}
    correct, per = 0, {int(k): [0, 0] for k in usable}
    for _ in range(trials):
        k = usable[rng.integers(len(usable))]
        sel = rng.choice(np.flatnonzero(labels == k), size=n, replace=False)
        hit = int(np.argmin(nll[sel].sum(axis=0)) == k)
        correct += hit
        per[int(k)][0] += hit
        per[int(k)][1] += 1
    return {"n_games": n, "trials": trials, "correct": correct, "accuracy": correct / trials,
            "labels": [int(k) for k in usable],
            "by_label": {str(k): (c / t if t else None) for k, (c, t) in per.items()}}
