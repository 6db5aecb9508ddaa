"""The ownership and score heads scored against a split's targets (single pass): :class:`HeadSums`.

=======================  ===================================================================================
figure                   definition
=======================  ===================================================================================
ownership ``accuracy``   over the positions of games with an ownership target (``ownership_source`` > 0), the
                         share of their owned points (target +1 or -1; dame and seki points left out) whose
                         predicted ownership has the target's sign (0 is wrong)
score ``mae``            mean absolute error in points of the predicted margin over the positions of games
                         with a score (a finite ``score``: results by counting)
=======================  ===================================================================================

Sums add up over parts of a split (:func:`merge`); a head the net lacks has no block. The two rules, on one batch,
are :func:`kifunet.models.aux_heads.ownership_counts` and :func:`~kifunet.models.aux_heads.score_errors`, run with
NumPy here and with jax.numpy by the evaluation during training (:func:`kifunet.train.steps.eval_step`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kifunet.models.aux_heads import ownership_counts, score_errors


@dataclasses.dataclass
class HeadSums:
    """Running sums (module table); ``ownership`` / ``score``: whether the net has that head."""

    ownership: bool = False
    score: bool = False
    own_rows: int = 0
    own_points: int = 0
    own_correct: int = 0
    score_rows: int = 0
    score_abs_sum: float = 0.0

    def update(self, outputs: dict, batch: dict) -> None:
        """Add one batch: ``outputs`` (``ownership`` [B, N, N], ``score`` [B] or None), ``batch`` with the split's
        targets (:mod:`kifunet.data_prep.datasets.game_targets`)."""
        if self.ownership and outputs.get("ownership") is not None:
            rows, points, right = ownership_counts(outputs["ownership"], batch)
            self.own_rows += int(rows)
            self.own_points += int(points)
            self.own_correct += int(right)
        if self.score and outputs.get("score") is not None:
            rows, abs_sum = score_errors(np.asarray(outputs["score"], np.float64),
                                         {**batch, "score": np.asarray(batch["score"], np.float64)})
            self.score_rows += int(rows)
            self.score_abs_sum += float(abs_sum)

    def to_dict(self) -> dict:
        out = {}
        if self.ownership:
            out["ownership"] = {"rows": self.own_rows, "points": self.own_points, "correct": self.own_correct,
                                "accuracy": self.own_correct / self.own_points if self.own_points else None}
        if self.score:
            out["score"] = {"rows": self.score_rows, "abs_sum": self.score_abs_sum,
                            "mae": self.score_abs_sum / self.score_rows if self.score_rows else None}
        return out


def merge(blocks: list[dict]) -> dict:
    """One ``heads`` block from the blocks of parts of a split (sums added)."""
    out = {}
    if all("ownership" in b for b in blocks):
        rows, pts, ok = (sum(b["ownership"][k] for b in blocks) for k in ("rows", "points", "correct"))
        out["ownership"] = {"rows": rows, "points": pts, "correct": ok, "accuracy": ok / pts if pts else None}
    if all("score" in b for b in blocks):
        rows, s = sum(b["score"]["rows"] for b in blocks), sum(b["score"]["abs_sum"] for b in blocks)
        out["score"] = {"rows": rows, "abs_sum": s, "mae": s / rows if rows else None}
    return out


def summary(block: dict) -> list[str]:
    """Report lines of a ``heads`` block."""
    lines = []
    o = block.get("ownership")
    if o is not None:
        acc = "-" if o["accuracy"] is None else f"{100 * o['accuracy']:.2f}%"
        lines.append(f"ownership head: {acc} of {o['points']:,} owned points right, in {o['rows']:,} positions of "
                     "games that ended by counting")
    s = block.get("score")
    if s is not None:
        mae = "-" if s["mae"] is None else f"{s['mae']:.2f} points"
        lines.append(f"score head: mean absolute error {mae} over {s['rows']:,} positions with a counted result")
    return lines
