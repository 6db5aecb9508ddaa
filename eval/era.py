"""The era: the same positions predicted by a profiled net under each row's own date and under a date forced to
another year, every other profile field kept.

:func:`rows_of_years` picks the rows, and the comparison gives per row the nats and top-1 under both dates, the
total-variation *shift* between the two move distributions and the probability on the 3-3 points; :func:`openings`
says where the most shifted rows fall. A net without a profile input is refused. The terms: docs/profiles.md
("The era").
"""

from __future__ import annotations

import numpy as np

from kifunet.data_prep import profiles
from kifunet.eval import attribution as A
from kifunet.eval import metrics as M

#: the per-row arrays of :func:`compare`
ROW_KEYS = ("row", "game_index", "move_number", "own_nll", "forced_nll", "own_correct", "forced_correct", "shift",
            "own_p33", "forced_p33")


def rows_of_years(reader, first: int | None = None, last: int | None = None, limit: int | None = None) -> np.ndarray:
    """int64 row indices of the split whose game's calendar year is in ``first..last`` (None: no bound; an unknown
    date is in no bounded range), the first ``limit`` of them in row order (None: all)."""
    rows = np.arange(len(reader), dtype=np.int64)
    if first is not None or last is not None:
        years = M.year_keys(reader.profile_games()["game_days"])[np.asarray(reader.column("game_index"), np.int64)]
        keep = np.ones(len(rows), bool)
        if first is not None:
            keep &= years >= int(first)
        if last is not None:
            keep &= years <= int(last)
        rows = rows[keep]
    return rows if limit is None else rows[:max(0, int(limit))]


def three_three_points(n: int) -> np.ndarray:
    """The flat indices of the four 3-3 points of an ``n`` x ``n`` board (rows from the top)."""
    lines = (2, n - 3)
    return np.asarray(sorted({r * n + c for r in lines for c in lines}), np.int64)


def _softmax(logits: np.ndarray) -> np.ndarray:
    return np.exp(M.log_softmax(logits))


def compare(predictor, reader, rows, forced_days: int, *, batch_size: int = 256) -> dict[str, np.ndarray]:
    """The per-row arrays (:data:`ROW_KEYS`, module table) of ``rows`` of ``reader`` under their own profile and
    with the date forced to ``forced_days``. ``predictor`` must read a profile."""
    if not predictor.reads_profile:
        raise ValueError("this net has no profile input (trained with model.profile_embedding 0): a forced date "
                         "would change nothing")
    if reader.board_size != predictor.board_size:
        raise ValueError(f"{reader.root}: board {reader.board_size}x{reader.board_size}, the net's "
                         f"{predictor.board_size}x{predictor.board_size}")
    rows = np.asarray(rows, np.int64).reshape(-1)
    forced = {"date": int(forced_days)}
    points = three_three_points(reader.board_size)
    reader.with_profile(True)
    parts: dict[str, list] = {k: [] for k in ROW_KEYS}
    for a in range(0, len(rows), batch_size):
        batch = reader.batch(rows[a:a + batch_size])
        own = A.row_profiles(batch)
        target = batch["target"].astype(np.int64)
        out = {}
        for name, vectors in (("own", own), ("forced", profiles.override_rows(own, forced))):
            logits, _ = predictor.predict_with_value(dict(batch, profile=vectors), pad_to=batch_size)
            rank, nll = M.example_stats(logits, target)
            p = _softmax(logits)
            out[name] = p
            parts[f"{name}_nll"].append(nll)
            parts[f"{name}_correct"].append(rank == 0)
            parts[f"{name}_p33"].append(p[:, points].sum(axis=1))
        parts["shift"].append(0.5 * np.abs(out["own"] - out["forced"]).sum(axis=1))
        parts["row"].append(batch["index"].astype(np.int64))
        parts["game_index"].append(np.asarray(batch.get("game_index", np.full(len(target), -1)), np.int64))
        parts["move_number"].append(np.asarray(batch.get("move_number", np.full(len(target), -1)), np.int64))
    empty = {"own_correct": bool, "forced_correct": bool, "row": np.int64, "game_index": np.int64,
             "move_number": np.int64}
    return {k: (np.concatenate(v) if v else np.zeros(0, empty.get(k, np.float64))) for k, v in parts.items()}


def summary(res: dict) -> dict:
    """Top-1 (%), nats and mean shift of :func:`compare`'s arrays under own and forced dates, and the
    differences (forced minus own); None for no rows."""
    n = len(res["own_nll"])
    if n == 0:
        return {"rows": 0, "top1_own": None, "top1_forced": None, "d_top1": None, "nats_own": None,
                "nats_forced": None, "d_nats": None, "mean_shift": None}
    t_own, t_forced = 100.0 * np.mean(res["own_correct"]), 100.0 * np.mean(res["forced_correct"])
    n_own, n_forced = float(np.mean(res["own_nll"])), float(np.mean(res["forced_nll"]))
    return {"rows": n, "top1_own": float(t_own), "top1_forced": float(t_forced), "d_top1": float(t_forced - t_own),
            "nats_own": n_own, "nats_forced": n_forced, "d_nats": n_forced - n_own,
            "mean_shift": float(np.mean(res["shift"]))}


def most_shifted(res: dict, k: int) -> np.ndarray:
    """Positions in :func:`compare`'s arrays of the ``k`` rows of largest shift, largest first (ties: row
    order)."""
    return np.argsort(-np.asarray(res["shift"], np.float64), kind="stable")[:max(0, int(k))]


def openings(res: dict, *, top_share: float = 0.01, first_moves: int = 30) -> dict:
    """Are the most shifted rows openings? The share of the ``top_share`` most shifted rows (at least one) whose
    move number is at most ``first_moves``, beside that share among all the rows (None without rows or move
    numbers)."""
    moves = np.asarray(res["move_number"], np.int64)
    out = {"top_share": top_share, "first_moves": first_moves, "top_rows": 0, "share_top": None,
           "share_all": None}
    if len(moves) == 0 or np.any(moves < 1):
        return out
    top = most_shifted(res, max(1, int(round(top_share * len(moves)))))
    out.update(top_rows=len(top), share_top=float(np.mean(moves[top] <= first_moves)),
               share_all=float(np.mean(moves <= first_moves)))
    return out


def three_three(res: dict, *, first_moves: int = 40) -> dict:
    """The mean probability on the 3-3 points (``p33``, module table) over the rows whose move number is at
    most ``first_moves``, under own and forced dates (None without such rows)."""
    moves = np.asarray(res["move_number"], np.int64)
    early = (moves >= 1) & (moves <= first_moves)
    own = float(np.mean(res["own_p33"][early])) if early.any() else None
    forced = float(np.mean(res["forced_p33"][early])) if early.any() else None
    return {"first_moves": first_moves, "rows": int(early.sum()), "own": own, "forced": forced}
