"""Move-prediction metrics as sums and counts: top-k accuracy, cross-entropy in nats, perplexity; and, for nets with
a value head, the value MSE and winner prediction.

Every number is accumulated over the whole split (exact float64 sums, :class:`ExactSum`) and divided once at the
end, so the batch size never changes a result. A played move's rank counts ties against it
(:func:`~kifunet.models.base.played_move_rank`, re-exported here); non-finite logits never raise; a legality mask
that calls the played move illegal raises ``ValueError``. :class:`ValueSums` scores a value head, :class:`Breakdown`
splits everything by phase, rank, colour and :data:`PROFILE_PARTS`, and :func:`ensemble_log_probs` averages the 8
passes. The fields and rules: docs/evaluation.md ("The metrics and the result file").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kifunet.models.base import constant_predictor_mse, value_outcome_stats
from kifunet.models.base import played_move_rank  # noqa: F401  (re-exported: the tie rule's one definition)

MAX_K = 10
#: default move-number buckets for the game-phase breakdown: first move number of each bucket (1-based)
PHASE_STARTS = (1, 21, 51, 101, 151, 201, 251)
COLOUR_LABELS = {1: "black", 2: "white"}
#: the profile breakdowns, each with the batch column it groups by
PROFILE_PARTS = {"by_year": "game_days", "by_source": "game_source", "by_time_control": "game_time_control"}
UNKNOWN_LABEL = "unknown"
_UNKNOWN_KEY = -(2 ** 31)  # the group key of an unknown field (sorts first as a key, printed last)
TIE_RULE = ("pessimistic: rank = number of other moves with logit >= the played move's logit; "
            "top-k correct iff rank < k (ties count against)")


# ------------------------------------------------------------------------------------------------ per position
def _as_logits(logits, legal=None) -> np.ndarray:
    """float64 logits, NaN read as ``-inf`` (no probability: docs/evaluation.md, non-finite logits), illegal moves
    ``-inf`` under ``legal``."""
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"logits must be [B, M]; got shape {z.shape}")
    z = np.where(np.isnan(z), -np.inf, z)
    if legal is not None:
        legal = np.asarray(legal, dtype=bool)
        if legal.shape != z.shape:
            raise ValueError(f"legal mask shape {legal.shape} differs from logits shape {z.shape}")
        z = np.where(legal, z, -np.inf)
    return z


def log_softmax(logits, legal=None) -> np.ndarray:
    """float64 ``log softmax`` over the last axis; with ``legal``, over the legal moves only (others -inf). Any
    logits give a result, never an exception nor a NaN (docs/evaluation.md, non-finite logits)."""
    z = _as_logits(logits, legal)
    if z.shape[-1] == 0:
        return z
    m = z.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        shifted = z - np.where(np.isfinite(m), m, 0.0)
        out = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        top = z == np.inf  # rows whose maximum is +inf: those moves share the probability
        out = np.where(m == np.inf, np.where(top, -np.log(np.maximum(top.sum(axis=-1, keepdims=True), 1)), -np.inf),
                       out)
    return np.where(m == -np.inf, -np.inf, out)  # no move with any probability: every move -inf


def target_ranks(logits, target, legal=None) -> np.ndarray:
    """int64 ``[B]``: number of other moves whose logit is >= the played move's (see the tie rule above)."""
    z = _as_logits(logits, legal)
    t = np.asarray(target, dtype=np.int64).reshape(-1)
    if t.shape[0] != z.shape[0]:
        raise ValueError(f"{t.shape[0]} targets for {z.shape[0]} positions")
    if t.size and (t.min() < 0 or t.max() >= z.shape[1]):
        raise ValueError(f"targets must be in 0..{z.shape[1] - 1}")
    if legal is not None:
        ok = np.asarray(legal, dtype=bool)[np.arange(z.shape[0]), t]
        if not ok.all():
            bad = np.flatnonzero(~ok)
            raise ValueError(f"the played move is illegal under the mask at batch rows {bad.tolist()[:10]}")
    return played_move_rank(z, t).astype(np.int64)


def example_stats(logits, target, legal=None) -> tuple[np.ndarray, np.ndarray]:
    """``(rank int64 [B], nll float64 [B])`` for each position; the rules are in docs/evaluation.md."""
    ranks = target_ranks(logits, target, legal)
    lp = log_softmax(logits, legal)
    t = np.asarray(target, dtype=np.int64).reshape(-1)
    return ranks, -lp[np.arange(lp.shape[0]), t]


def ensemble_log_probs(logits_per_pass: Sequence[np.ndarray], legal=None) -> np.ndarray:
    """``log(mean_s softmax(z_s))`` over passes ``z_s [B, M]`` already mapped back to the original orientation."""
    lps = np.stack([log_softmax(z, legal) for z in logits_per_pass])  # [S, B, M]
    m = lps.max(axis=0)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(lps - safe).mean(axis=0))


def legal_from_planes(planes, feature_set) -> np.ndarray | None:
    """bool ``[B, N*N + 1]`` legality for the side to move from the planes the set declares
    (:meth:`~kifunet.data_prep.planes.features.FeatureSet.legal_channels`: legal where any is set; pass legal), or
    ``None`` for sets that declare none (replay instead: :mod:`kifunet.eval.legality`)."""
    x = np.asarray(planes)
    b, n = x.shape[0], x.shape[1]
    pick = feature_set.legal_channels()
    if pick is None:
        return None
    on_board = (x[..., list(pick)] != 0).any(axis=-1).reshape(b, n * n)
    return np.concatenate([on_board, np.ones((b, 1), dtype=bool)], axis=1)


# ------------------------------------------------------------------------------------------------ exact sums
class ExactSum:
    """Correctly rounded running sum of floats (Shewchuk's partials, as in ``math.fsum``). Non-finite values are
    summed apart by IEEE rules (``inf + 1 = inf``, ``inf + -inf = nan``): the sum is that when there is one."""

    def __init__(self, value: float = 0.0):
        self._partials: list[float] = []
        self._special = 0.0  # the sum of the non-finite values added (0.0: none)
        if value:
            self.add([value])

    def add(self, values) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        odd = ~np.isfinite(values)
        if odd.any():
            for x in values[odd].tolist():
                self._special += x
            values = values[~odd]
        partials = self._partials
        for x in values.tolist():
            i = 0
            for y in partials:
                if abs(x) < abs(y):
                    x, y = y, x
                hi = x + y
                if math.isinf(hi):  # two finite values whose sum overflows: that is the sum from now on
                    self._special += hi
                    x = 0.0
                    break
                lo = y - (hi - x)
                if lo:
                    partials[i] = lo
                    i += 1
                x = hi
            partials[i:] = [x]

    def merge(self, other: "ExactSum") -> None:
        self.add(other._partials)
        self._special += other._special

    @property
    def value(self) -> float:
        return self._special if self._special else fsum(self._partials)


def fsum(values) -> float:
    """``math.fsum`` for any floats: a sum with a non-finite term or an overflow is that by IEEE rules (``inf``,
    ``-inf`` or ``nan``) where ``math.fsum`` raises."""
    values = [float(v) for v in values]
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):
        total = 0.0
        for v in values:
            total += v
        return total


def exp(x: float) -> float:
    """``math.exp`` that overflows to ``inf`` (a perplexity of a huge cross-entropy) instead of raising."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


# ------------------------------------------------------------------------------------------------ accumulators
class ValueSums:
    """Value-head sums over a set of positions (docs/evaluation.md, "The metrics and the result file")."""

    def __init__(self):
        self.known = 0
        self._sq = ExactSum()
        self.decided = 0
        self.winner_correct = 0
        self.outcome_sum = 0

    def update(self, value, outcome) -> None:
        """``value`` float ``[B]`` (the net's, in [-1, 1]) and ``outcome`` int ``[B]`` (the dataset's column)."""
        v = np.asarray(value, dtype=np.float64).reshape(-1)
        o = np.asarray(outcome, dtype=np.int64).reshape(-1)
        if v.shape != o.shape:
            raise ValueError("value and outcome must have one entry per position")
        with np.errstate(over="ignore", invalid="ignore"):  # a NaN or infinite value: docs/evaluation.md
            known, sq, decided, correct = value_outcome_stats(v, o)
        self.known += int(known.sum())
        self._sq.add(sq[known])
        self.decided += int(decided.sum())
        self.winner_correct += int(correct.sum())
        self.outcome_sum += int(o[known].sum())

    def merge(self, other: "ValueSums") -> None:
        self.known += other.known
        self._sq.merge(other._sq)
        self.decided += other.decided
        self.winner_correct += other.winner_correct
        self.outcome_sum += other.outcome_sum

    @property
    def sq_sum(self) -> float:
        return self._sq.value

    def to_dict(self) -> dict:
        """JSON-ready: the sums first, then the numbers derived from them (:func:`value_block`)."""
        return value_block({"known": self.known, "sq_sum": self.sq_sum, "decided": self.decided,
                            "winner_correct": self.winner_correct, "outcome_sum": self.outcome_sum})


def value_block(sums: dict) -> dict:
    """A :meth:`ValueSums.to_dict` block from its five sums: ``mse``, ``winner_accuracy`` and ``baseline_mse`` added
    (NaN where a denominator is 0)."""
    known, decided = int(sums["known"]), int(sums["decided"])
    nan = float("nan")
    d = {k: sums[k] for k in ("known", "sq_sum", "decided", "winner_correct", "outcome_sum")}
    d.update(mse=float(sums["sq_sum"]) / known if known else nan,
             winner_accuracy=int(sums["winner_correct"]) / decided if decided else nan,
             baseline_mse=constant_predictor_mse(known, decided, sums["outcome_sum"]))
    return d


def merge_value_dicts(blocks: Sequence[dict]) -> dict:
    """One value block from several over disjoint positions: the sums added, the derived numbers recomputed."""
    return value_block({"known": sum(int(b["known"]) for b in blocks),
                        "sq_sum": fsum(float(b["sq_sum"]) for b in blocks),
                        "decided": sum(int(b["decided"]) for b in blocks),
                        "winner_correct": sum(int(b["winner_correct"]) for b in blocks),
                        "outcome_sum": sum(int(b["outcome_sum"]) for b in blocks)})


class MetricSums:
    """Sums and counts for one set of positions (and its :class:`ValueSums`, ``value``, once a value was given):
    ``count``, ``nll_sum`` and ``rank_hist`` (docs/evaluation.md, "The metrics and the result file")."""

    def __init__(self, num_moves: int):
        self.num_moves = int(num_moves)
        self.count = 0
        self._nll = ExactSum()
        self.rank_hist = np.zeros(self.num_moves, dtype=np.int64)
        self.value: ValueSums | None = None

    def update(self, ranks, nll, value=None, outcome=None) -> None:
        ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
        nll = np.asarray(nll, dtype=np.float64).reshape(-1)
        if ranks.shape != nll.shape:
            raise ValueError("ranks and nll must have one entry per position")
        if ranks.size and (ranks.min() < 0 or ranks.max() >= self.num_moves):
            raise ValueError(f"ranks must be in 0..{self.num_moves - 1}")
        if value is not None:
            if outcome is None:
                raise ValueError("a value needs the positions' outcomes")
            if np.asarray(value).reshape(-1).shape != ranks.shape:
                raise ValueError("value must have one entry per position")
            if self.value is None:
                self.value = ValueSums()
            self.value.update(value, outcome)
        self.count += int(ranks.size)
        self._nll.add(nll)
        self.rank_hist += np.bincount(ranks, minlength=self.num_moves)

    def merge(self, other: "MetricSums") -> None:
        if other.num_moves != self.num_moves:
            raise ValueError("cannot merge sums over different move counts")
        self.count += other.count
        self._nll.merge(other._nll)
        self.rank_hist += other.rank_hist
        if other.value is not None:
            if self.value is None:
                self.value = ValueSums()
            self.value.merge(other.value)

    @property
    def nll_sum(self) -> float:
        return self._nll.value

    def topk_correct(self, k: int) -> int:
        return int(self.rank_hist[: int(k)].sum())

    def accuracy(self, k: int = 1) -> float:
        return self.topk_correct(k) / self.count if self.count else float("nan")

    @property
    def cross_entropy(self) -> float:
        return self.nll_sum / self.count if self.count else float("nan")

    @property
    def perplexity(self) -> float:
        return exp(self.cross_entropy) if self.count else float("nan")

    def to_dict(self, *, histogram: bool = False, max_k: int = MAX_K) -> dict:
        """JSON-ready: the sums and counts first, then the numbers derived from them."""
        d = {"count": self.count, "nll_sum": self.nll_sum,
             "topk_correct": [self.topk_correct(k) for k in range(1, max_k + 1)],
             "accuracy": {str(k): self.accuracy(k) for k in range(1, max_k + 1)},
             "cross_entropy_nats": self.cross_entropy, "perplexity": self.perplexity}
        if histogram:
            d["rank_histogram"] = self.rank_hist.tolist()
        if self.value is not None:
            d["value"] = self.value.to_dict()
        return d


def _phase_labels(starts: Sequence[int]) -> list[str]:
    out = []
    for i, a in enumerate(starts):
        out.append(f"{a}-{starts[i + 1] - 1}" if i + 1 < len(starts) else f"{a}+")
    return out


def _rank_label(value: int) -> str:
    from kifunet.data_prep import ranks

    try:
        return ranks.rank_to_text(int(value))
    except ValueError:
        return "?"


def year_keys(game_days) -> np.ndarray:
    """int64 calendar year of each ``game_days`` (days since 1970-01-01), ``_UNKNOWN_KEY`` where unknown."""
    from kifunet.data_prep import profiles

    days = np.asarray(game_days, dtype=np.int64).reshape(-1)
    known = days != profiles.UNKNOWN_DAYS
    years = np.where(known, days, 0).astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970
    return np.where(known, years, _UNKNOWN_KEY)


def _code_keys(codes, names: Sequence[str]) -> np.ndarray:
    c = np.asarray(codes, dtype=np.int64).reshape(-1)
    return np.where((c >= 0) & (c < len(names)), c, _UNKNOWN_KEY)


def _profile_label(part: str, key: int) -> str:
    from kifunet.data_prep import profiles

    if key == _UNKNOWN_KEY:
        return UNKNOWN_LABEL
    if part == "by_year":
        return str(key)
    return (profiles.SOURCES if part == "by_source" else profiles.TIME_CONTROLS)[key]


def _profile_sort_key(part: str, label: str):
    """Order of a profile breakdown's labels: years ascending / the profiles' list order, ``unknown`` last."""
    from kifunet.data_prep import profiles

    if label == UNKNOWN_LABEL:
        return (1, 0)
    if part == "by_year":
        return (0, int(label))
    names = profiles.SOURCES if part == "by_source" else profiles.TIME_CONTROLS
    return (0, names.index(label) if label in names else len(names))


class Breakdown:
    """The whole split plus per-phase, per-rank, per-colour, per-year, per-source and per-time-control
    :class:`MetricSums`."""

    def __init__(self, num_moves: int, phase_starts: Sequence[int] = PHASE_STARTS):
        starts = [int(s) for s in phase_starts]
        if not starts or starts[0] != 1 or any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError(f"phase starts must begin at 1 and increase: {phase_starts}")
        self.num_moves = int(num_moves)
        self.phase_starts = tuple(starts)
        self.phase_labels = _phase_labels(starts)
        self.total = MetricSums(num_moves)
        self.by_phase: dict[int, MetricSums] = {}
        self.by_rank: dict[int, MetricSums] = {}
        self.by_colour: dict[int, MetricSums] = {}
        self.by_year: dict[int, MetricSums] = {}
        self.by_source: dict[int, MetricSums] = {}
        self.by_time_control: dict[int, MetricSums] = {}

    def _group(self, table: dict, key: int) -> MetricSums:
        if key not in table:
            table[key] = MetricSums(self.num_moves)
        return table[key]

    def phase_index(self, move_number) -> np.ndarray:
        mn = np.asarray(move_number, dtype=np.int64)
        return np.searchsorted(np.asarray(self.phase_starts), mn, side="right") - 1

    def update(self, ranks, nll, *, move_number, player_rank, to_move, value=None, outcome=None, game_days=None,
               game_source=None, game_time_control=None) -> None:
        """One batch's positions; ``value`` (a two-headed net's, ``[B]``) with their ``outcome`` column adds the
        value sums to the whole and to every group. The ``game_*`` columns (:mod:`kifunet.data_prep.profiles`
        codes) group the profile breakdowns; one left out puts every row in that breakdown's ``unknown``."""
        ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
        nll = np.asarray(nll, dtype=np.float64).reshape(-1)
        if value is not None:
            value = np.asarray(value, dtype=np.float64).reshape(-1)
            outcome = None if outcome is None else np.asarray(outcome, dtype=np.int64).reshape(-1)
        from kifunet.data_prep import profiles

        self.total.update(ranks, nll, value, outcome)
        unknown = np.full(ranks.shape, _UNKNOWN_KEY, np.int64)
        for table, keys in ((self.by_phase, self.phase_index(move_number)),
                            (self.by_rank, np.asarray(player_rank, dtype=np.int64).reshape(-1)),
                            (self.by_colour, np.asarray(to_move, dtype=np.int64).reshape(-1)),
                            (self.by_year, unknown if game_days is None else year_keys(game_days)),
                            (self.by_source, unknown if game_source is None
                             else _code_keys(game_source, profiles.SOURCES)),
                            (self.by_time_control, unknown if game_time_control is None
                             else _code_keys(game_time_control, profiles.TIME_CONTROLS))):
            if keys.shape != ranks.shape:
                raise ValueError("one key per position")
            for key in np.unique(keys):
                sel = keys == key
                self._group(table, int(key)).update(ranks[sel], nll[sel],
                                                    None if value is None else value[sel],
                                                    None if value is None else outcome[sel])

    def merge(self, other: "Breakdown") -> None:
        if other.phase_starts != self.phase_starts:
            raise ValueError("cannot merge breakdowns with different phase buckets")
        self.total.merge(other.total)
        for mine, theirs in ((self.by_phase, other.by_phase), (self.by_rank, other.by_rank),
                             (self.by_colour, other.by_colour), (self.by_year, other.by_year),
                             (self.by_source, other.by_source), (self.by_time_control, other.by_time_control)):
            for k, v in theirs.items():
                self._group(mine, k).merge(v)

    def to_dict(self) -> dict:
        d = self.total.to_dict(histogram=True)
        d["by_phase"] = {self.phase_labels[k]: v.to_dict() for k, v in sorted(self.by_phase.items())}
        d["by_rank"] = {_rank_label(k): v.to_dict() for k, v in sorted(self.by_rank.items())}
        d["by_colour"] = {COLOUR_LABELS.get(k, str(k)): v.to_dict() for k, v in sorted(self.by_colour.items())}
        for part in PROFILE_PARTS:
            labelled = {_profile_label(part, k): v for k, v in getattr(self, part).items()}
            d[part] = {g: labelled[g].to_dict() for g in sorted(labelled, key=lambda g: _profile_sort_key(part, g))}
        return d


def merge_block_dicts(blocks: Sequence[dict]) -> dict:
    """One :meth:`MetricSums.to_dict` block from several over disjoint positions: counts, NLL sums, top-k
    counts (and rank histograms, when every block has one; value sums, when any has them) are added, and the
    derived numbers recomputed."""
    count = sum(int(b["count"]) for b in blocks)
    nll = fsum(float(b["nll_sum"]) for b in blocks)
    topk = [int(sum(col)) for col in zip(*(b["topk_correct"] for b in blocks))]
    nan = float("nan")
    d = {"count": count, "nll_sum": nll, "topk_correct": topk,
         "accuracy": {str(k): (c / count if count else nan) for k, c in enumerate(topk, start=1)},
         "cross_entropy_nats": nll / count if count else nan,
         "perplexity": exp(nll / count) if count else nan}
    if blocks and all("rank_histogram" in b for b in blocks):
        d["rank_histogram"] = np.sum([np.asarray(b["rank_histogram"], np.int64) for b in blocks], axis=0).tolist()
    values = [b["value"] for b in blocks if "value" in b]
    if values:
        d["value"] = merge_value_dicts(values)
    return d


def merge_breakdown_dicts(blocks: Sequence[dict]) -> dict:
    """One :meth:`Breakdown.to_dict` from several over disjoint positions: the whole and every group merged with
    :func:`merge_block_dicts`, groups in order; a profile breakdown only when every block has it."""
    out = merge_block_dicts(blocks)
    for part in ("by_phase", "by_rank", "by_colour", *PROFILE_PARTS):
        if part in PROFILE_PARTS and not all(part in b for b in blocks):
            continue
        keys: list[str] = []
        for b in blocks:
            keys += [k for k in b.get(part, {}) if k not in keys]
        if part == "by_phase":
            keys.sort(key=lambda k: int(k.split("-")[0].rstrip("+")))
        elif part == "by_rank":
            from kifunet.data_prep import ranks

            keys.sort(key=lambda k: (k == "?", ranks.parse_rank(k) if k != "?" else 0))
        elif part in PROFILE_PARTS:
            keys.sort(key=lambda k, part=part: _profile_sort_key(part, k))
        out[part] = {k: merge_block_dicts([b[part][k] for b in blocks if k in b.get(part, {})]) for k in keys}
    return out


def topn_curve(result: dict, max_n: int | None = None) -> np.ndarray:
    """Top-n accuracy for n = 1..max_n from a result block's ``rank_histogram`` (Maddison's Figure 1)."""
    hist = np.asarray(result["rank_histogram"], dtype=np.int64)
    n = len(hist) if max_n is None else min(int(max_n), len(hist))
    return np.cumsum(hist)[:n] / max(1, int(result["count"]))
