"""Evaluate a policy net on a dataset split: single pass and 8-symmetry ensemble, JSON and a printed table.

A :class:`Predictor` is a model plus the feature set its input planes come from: ``predict(batch)`` gives float32
logits ``[B, N*N + 1]``, ``predict_with_value(batch)`` ``(logits, value)`` with value None for a policy-only net;
:func:`kifunet.eval.runs.load_run` builds one from a training run directory. :func:`evaluate` reads the split once,
in order, and returns the result dict (``format = "kifunet-eval"``, version :data:`FORMAT_VERSION`);
:func:`load_result` accepts every version up to it and :func:`merge_results` adds parts up. The metric rules are in
:mod:`kifunet.eval.metrics`; the result file in docs/evaluation.md ("The metrics and the result file"). A net with an
ownership or score head adds a ``heads`` block (:mod:`kifunet.eval.head_metrics`)."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time

import numpy as np

from kifunet.data_prep.fileio import atomic, store
from kifunet.data_prep import ranks
from kifunet.data_prep.datasets.dataset_base import DatasetMismatch
from kifunet.data_prep.errors import InvalidValue, UserError, naming
from kifunet.eval import metrics as M

FORMAT = "kifunet-eval"
FORMAT_VERSION = 3
MODES = ("single", "ensemble")
MODE_TEXT = {"single": "single pass", "ensemble": "8-symmetry ensemble"}
ENSEMBLE_RULE = ("mean of the 8 symmetric passes' probabilities (each mapped back with the inverse symmetry; "
                 "with the legal mask each pass is renormalised over legal moves first); a value head's value: the "
                 "mean of the 8 passes' values")
VALUE_RULE = ("value MSE over the positions whose game result is known (draws: target 0); winner accuracy over "
              "the known positions of games with a winner (draws left out): the value's sign names the winner (0: "
              "wrong); baseline: the MSE of always predicting the evaluated positions' mean result")


# ---------------------------------------------------------------------------------------------- predictor
class Predictor:
    """A policy net and the feature set of its inputs: ``predict(batch) -> float32 logits [B, N*N + 1]``
    (``predict_with_value``: and the value of a two-headed net); ``net`` is its
    :class:`kifunet.models.forward.Forward` and ``facts`` the model's. Batches are split over all local devices
    (weights replicated) and padded up to ``pad_to`` rows, so a split's last, ragged batch reuses the compiled
    shape. ``info`` (model name, parameters, checkpoint, step...) is copied into the result JSON.
    """

    def __init__(self, model, feature_set: str, *, info: dict | None = None):
        import jax

        from kifunet.data_prep.planes import features
        from kifunet.models.forward import Forward

        self.fs = features.get(feature_set)
        self.feature_set = feature_set
        self.board_size = int(model.board_size)
        if int(model.in_planes) != self.fs.num_planes:
            raise InvalidValue(f"model takes {model.in_planes} planes; feature set {feature_set} has "
                             f"{self.fs.num_planes}")
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        self.model = model
        # data parallel over every local device (the batch split along a 1-D 'data' mesh, the weights
        # replicated): on a CPU with jax_num_cpu_devices = cores this is ~2x one device (kifunet eval sets it)
        self.devices = jax.local_device_count()
        # Auto axes: the compiler places each op, as inside any jit (JAX's default Explicit axes type every array's
        # sharding, and a rank embedding's gather of batch-sharded ranks then has no unambiguous output sharding)
        mesh = jax.make_mesh((self.devices,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
        self._batch_sharding = NamedSharding(mesh, P("data"))
        self.net = Forward(model, state_sharding=NamedSharding(mesh, P()))  # eval mode, the weights replicated
        self.facts = self.net.facts
        self.info = dict(info or {})
        self.info.setdefault("feature_set", feature_set)
        self.info.setdefault("board_size", self.board_size)
        if "params" not in self.info:
            from kifunet.models import count_params

            self.info["params"] = int(count_params(model))


    @property
    def reads_rank(self) -> bool:
        """Whether the prediction depends on the player's rank: the feature set has planes made from the
        ``player_rank`` column (Maddison's rank planes) or the model was built with a rank embedding."""
        return (any(f.constant and f.column == "player_rank" for f in self.fs.features)
                or self.facts.reads_rank)

    @property
    def reads_profile(self) -> bool:
        """Whether the net was built with a profile input (``profile_embedding``): batches then give it
        ``profile`` (float32 ``[B, 46]``, :mod:`kifunet.data_prep.profiles`); without one it reads all unknown."""
        return self.facts.reads_profile

    @property
    def num_moves(self) -> int:
        return self.board_size * self.board_size + 1

    @property
    def has_value(self) -> bool:
        """The net has a value head (``model.has_value``): :meth:`predict_with_value` gives its value."""
        return self.facts.has_value

    def predict(self, batch: dict, *, pad_to: int | None = None) -> np.ndarray:
        """float32 logits ``[B, N*N + 1]`` of a batch (a value head's output is dropped)."""
        return self.predict_with_value(batch, pad_to=pad_to)[0]

    def predict_with_value(self, batch: dict, *, pad_to: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """``(logits float32 [B, N*N + 1], value float32 [B] or None)``: the value of the side to move, in [-1, 1]
        (+1 it wins), for a net with a value head; None for a policy-only net."""
        out = self.predict_outputs(batch, pad_to=pad_to)
        return out["logits"], out["value"]

    def predict_outputs(self, batch: dict, *, pad_to: int | None = None) -> dict:
        """Every head's output of a batch as float32 NumPy arrays: ``logits``, ``value``, ``ownership``,
        ``score`` (:class:`kifunet.models.forward.Outputs`; None for a head the net lacks)."""
        planes = np.asarray(batch["planes"])
        b = planes.shape[0]
        n = self.board_size
        if planes.shape[1:] != (n, n, self.fs.num_planes):
            raise ValueError(f"planes {planes.shape[1:]} do not fit the model ({n}, {n}, {self.fs.num_planes})")
        rank = np.asarray(batch["player_rank"], dtype=np.int32).reshape(b)
        to_move = np.asarray(batch["to_move"], dtype=np.int32).reshape(b)
        profile = batch.get("profile") if self.reads_profile else None
        if profile is not None:
            profile = np.asarray(profile, np.float32).reshape(b, -1)
        size = max(b, int(pad_to or b))
        size = -(-size // self.devices) * self.devices  # whole rows per device
        if size > b:
            pad = size - b
            planes = np.concatenate([planes, np.zeros((pad,) + planes.shape[1:], planes.dtype)])
            rank = np.concatenate([rank, np.full(pad, rank[-1] if b else 0, np.int32)])
            to_move = np.concatenate([to_move, np.full(pad, to_move[-1] if b else 1, np.int32)])
            if profile is not None:
                profile = np.concatenate([profile, np.zeros((pad,) + profile.shape[1:], np.float32)])
        import jax

        planes, rank, to_move, profile = jax.device_put((planes, rank, to_move, profile), self._batch_sharding)
        out = self.net(planes, rank, to_move, profile)
        return {k: None if v is None else np.asarray(v, dtype=np.float32)[:b] for k, v in out._asdict().items()}

    def predict_symmetries(self, batch: dict, *, pad_to: int | None = None) -> list[np.ndarray]:
        """The 8 passes, each mapped back to the batch's orientation: ``out[s][:, k]`` is move ``k``'s logit."""
        return self.predict_symmetries_with_value(batch, pad_to=pad_to)[0]

    def predict_symmetries_with_value(self, batch: dict, *,
                                      pad_to: int | None = None) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        """The 8 passes' logits (as :meth:`predict_symmetries`) and values (a value is a number for the whole
        board, so it needs no mapping back; None for a policy-only net)."""
        from kifunet.data_prep import symmetries as sym

        planes = np.asarray(batch["planes"])
        b, n = planes.shape[0], self.board_size
        outs, values = [], []
        for s in range(sym.NUM_SYMMETRIES):
            ss = np.full(b, s, dtype=np.int64)
            moved = dict(batch, planes=sym.apply_planes_batch(planes, ss) if s else planes)
            z, v = self.predict_with_value(moved, pad_to=pad_to)
            outs.append(sym.apply_policy_batch(z, np.full(b, sym.INVERSE[s]), n) if s else z)
            values.append(v)
        return outs, (None if values[0] is None else values)


def with_player_rank(batch: dict, rank: int, feature_set) -> dict:
    """A copy of ``batch`` as if the player to move had ``rank`` (ranks.py scale): the ``player_rank`` column and
    every constant plane made from it (Maddison's rank planes) are replaced."""
    from kifunet.data_prep.planes import features

    fs = features.get(feature_set) if isinstance(feature_set, str) else feature_set
    planes = np.array(batch["planes"], copy=True)
    b = planes.shape[0]
    col = np.full(b, int(rank), dtype=np.int8)
    off = 0
    for f in fs.features:
        if f.constant and f.column == "player_rank":
            planes[..., off:off + f.planes] = f.fn(col)[:, None, None, :]
        off += f.planes
    return dict(batch, planes=planes, player_rank=col)


# ---------------------------------------------------------------------------------------------- dataset spec
def _date_ranges(ranges) -> str:
    out = []
    for a, b in ranges:
        a = str(a).replace("-00", "")
        b = str(b).replace("-99", "")
        out.append(a if a == b else f"{a}..{b}")
    return ",".join(out)


def dataset_spec(manifest: dict, split: str) -> dict:
    """What makes our numbers comparable: source inputs, filters, split rule, counts, feature set."""
    feats = manifest.get("features", {})
    filt = manifest.get("filters", {})
    rule = manifest.get("split_rule", {})
    info = manifest.get("splits", {}).get(split, {})
    inputs = [os.path.basename(str(i.get("path", ""))) for i in manifest.get("inputs", [])]
    split_text = []
    for d in rule.get("dates", []):
        txt = "rest" if d.get("rest") else _date_ranges(d.get("ranges", []))
        split_text.append(f"{d.get('split')}: dates {txt}")
    for h in rule.get("hashes", []):
        split_text.append(f"{h.get('name')}: game-hash fraction {h.get('fraction')} of {h.get('source')}")
    if rule.get("default"):
        split_text.append(f"{rule['default']}: everything else")
    f_text = [f"board {filt.get('board_size', manifest.get('board_size'))}"]
    f_text.append("no handicap" if filt.get("no_handicap") else "handicap games kept")
    rank_rules = [f"both >= {filt['min_both_rank']}" if filt.get("min_both_rank") else None,
                  f"one >= {filt['min_either_rank']}" if filt.get("min_either_rank") else None]
    rank_rules = [r for r in rank_rules if r]
    if rank_rules:
        f_text.append("games with " + " or ".join(rank_rules))
    if filt.get("min_rank"):
        f_text.append(f"moves by >= {filt['min_rank']}")
    if filt.get("min_opponent_rank"):
        f_text.append(f"opponent >= {filt['min_opponent_rank']}")
    if filt.get("date_from") or filt.get("date_to"):
        f_text.append(f"dates {filt.get('date_from') or ''}..{filt.get('date_to') or ''}")
    if filt.get("min_moves"):
        f_text.append(f">= {filt['min_moves']} moves")
    if filt.get("skip_first"):
        f_text.append(f"first {filt['skip_first']} moves dropped")
    f_text.append("passes kept" if filt.get("include_passes") else "passes dropped")
    if filt.get("dedupe"):
        f_text.append("duplicates dropped")
    spec = {
        "inputs": inputs,
        "preset": manifest.get("preset"),
        "features": f"{feats.get('name')} v{feats.get('version')} ({feats.get('num_planes')} planes)",
        "board_size": manifest.get("board_size"),
        "filters": ", ".join(f_text),
        "split_rule": "; ".join(split_text),
        "split": split,
        "games": info.get("games"),
        "positions": info.get("rows", info.get("positions")),
        "symmetries_stored": manifest.get("symmetries"),
        "fingerprint": manifest.get("fingerprint"),
    }
    spec["text"] = spec_text(spec)
    return spec


def spec_text(spec: dict) -> str:
    ins = spec.get("inputs") or []
    shown = ", ".join(ins[:3]) + (f" +{len(ins) - 3} more" if len(ins) > 3 else "")
    preset = f" (preset {spec['preset']})" if spec.get("preset") else ""
    games = spec.get("games")
    copies = " (each stored in its 8 symmetries)" if spec.get("symmetries_stored") == "all" else ""
    return (f"{shown or '?'}{preset}; {spec.get('filters')}; split {spec.get('split')} "
            f"[{spec.get('split_rule')}]: {games if games is not None else '?'} games, "
            f"{spec.get('positions')} positions{copies}; features {spec.get('features')}")


# ---------------------------------------------------------------------------------------------- evaluation
def evaluate(predictor: Predictor, reader, *, batch_size: int = 256, ensemble: bool = False,
             legal_mask: bool = False, limit: int | None = None, start: int = 0, phase_starts=M.PHASE_STARTS,
             progress: bool = True, as_rank: int | None = None, profile: str | None = None) -> dict:
    """The result dict of ``predictor`` on every row of ``reader`` (a dataset split), or on rows ``start`` to
    ``start + limit - 1`` (parts add up with :func:`merge_results`). Constant planes the net was trained with
    (``input.add_planes``) are added here too. ``as_rank`` tells the net that every mover has that rank
    (:func:`with_player_rank`); the breakdown by rank still groups rows by the real rank. ``profile``
    (``"year=2005,source=kgs"``) forces those fields on every row for a net with a profile input, and is a
    ``ValueError`` for a net without one."""
    from tqdm.auto import tqdm

    from kifunet.eval.legality import LegalMasker

    fields = _open_for(predictor, reader, profile)
    if batch_size < 1:
        raise InvalidValue("batch_size must be >= 1")
    start = int(start)
    if not 0 <= start <= len(reader):
        raise InvalidValue(f"start {start} is outside the split's {len(reader)} rows")
    stop = len(reader) if limit is None else min(len(reader), start + int(limit))
    masker = LegalMasker(reader) if legal_mask else None
    acc = {m: M.Breakdown(predictor.num_moves, phase_starts) for m in (MODES if ensemble else MODES[:1])}
    heads = _head_sums(predictor, reader)
    if heads is not None:
        acc["heads"] = heads
    t0 = time.perf_counter()
    bar = tqdm(total=stop - start, unit="pos", desc=f"eval {reader.split}", disable=not progress, leave=False)
    try:
        for batch in reader.iter_batches(batch_size, start=start, stop=stop):
            legal = masker(batch) if masker is not None else None
            _score_batch(predictor, batch, acc, legal=legal, ensemble=ensemble, as_rank=as_rank, fields=fields,
                         batch_size=batch_size)
            bar.update(len(batch["target"]))
    finally:
        bar.close()
    settings = {"legal_mask": bool(legal_mask), "legal_source": masker.source if masker else None,
                "tie_rule": M.TIE_RULE, "ensemble_rule": ENSEMBLE_RULE if ensemble else None,
                **({"value_rule": VALUE_RULE} if predictor.has_value else {}),
                "phase_starts": list(acc["single"].phase_starts), "batch_size": int(batch_size),
                "limit": None if limit is None else int(limit), "as_rank": None if as_rank is None else int(as_rank)}
    return _result(predictor, reader, acc, settings, fields, (start, stop), time.perf_counter() - t0)


def _head_sums(predictor: Predictor, reader):
    """A :class:`kifunet.eval.head_metrics.HeadSums` for a net with an ownership or score head, ``reader`` then
    asked for its targets; None for a net without them or a split without targets (TFDS)."""
    from kifunet.data_prep.datasets.dataset_base import DatasetError
    from kifunet.eval.head_metrics import HeadSums

    facts = predictor.facts
    if not (facts.has_ownership or facts.has_score):
        return None
    try:
        reader.with_targets(True)
    except DatasetError:
        return None
    return HeadSums(ownership=facts.has_ownership, score=facts.has_score)


def _open_for(predictor: Predictor, reader, profile: str | None) -> dict:
    """Ready ``reader`` for ``predictor`` (its constant planes added, the game fields read) and return the profile
    fields ``profile`` forces; ``ValueError`` for a feature set, profile or board the net cannot read."""
    from kifunet.data_prep import profiles
    from kifunet.data_prep.planes import features

    extra = features.constant_extension(reader.feature_name, predictor.feature_set)
    if extra is None:
        raise DatasetMismatch(f"dataset {reader.root} has feature set {reader.feature_name}; the model was trained on "
                         f"{predictor.feature_set}")
    reader.add_constant_planes(extra)  # a net trained with input.add_planes reads those planes here too
    fields = profiles.parse_fields(profile) if profile else {}
    if profile and not predictor.reads_profile:
        raise InvalidValue(f"--profile {profile}: this net has no profile input (trained with "
                         f"model.profile_embedding 0), so the profile would change nothing")
    reader.with_profile(True)  # the game fields: the profile breakdowns, and the input of a profiled net
    if reader.board_size != predictor.board_size:
        raise DatasetMismatch(f"dataset board {reader.board_size}x{reader.board_size}, model {predictor.board_size}")
    return fields


def _score_batch(predictor: Predictor, batch: dict, acc: dict, *, legal, ensemble: bool, as_rank: int | None,
                 fields: dict, batch_size: int) -> None:
    """Add one batch's predictions to the breakdowns ``acc`` (``single``, and ``ensemble`` when asked)."""
    from kifunet.data_prep import profiles

    keys = dict(move_number=batch["move_number"], player_rank=batch["player_rank"], to_move=batch["to_move"],
                **{c: batch[c] for c in M.PROFILE_PARTS.values()})
    target = batch["target"].astype(np.int64)
    if as_rank is not None:
        batch = with_player_rank(batch, as_rank, predictor.feature_set)
    if predictor.reads_profile:
        batch = dict(batch, profile=profiles.override_rows(profiles.encode_rows(
            batch["player_rank"], batch["opponent_rank"], *(batch[k] for k in profiles.GAME_FIELDS)), fields))
    if ensemble:
        passes, values = predictor.predict_symmetries_with_value(batch, pad_to=batch_size)
        single, value = passes[0], (None if values is None else values[0])
        ens_value = None if values is None else np.mean(np.stack(values).astype(np.float64), axis=0)
        acc["ensemble"].update(*M.example_stats(M.ensemble_log_probs(passes, legal), target), **keys,
                               **_value_keys(ens_value, batch))
    elif "heads" in acc:
        outs = predictor.predict_outputs(batch, pad_to=batch_size)
        single, value = outs["logits"], outs["value"]
    else:
        single, value = predictor.predict_with_value(batch, pad_to=batch_size)
    if "heads" in acc:
        acc["heads"].update(outs if not ensemble else predictor.predict_outputs(batch, pad_to=batch_size), batch)
    acc["single"].update(*M.example_stats(single, target, legal), **keys, **_value_keys(value, batch))


def _result(predictor: Predictor, reader, acc: dict, settings: dict, fields: dict, rows: tuple, seconds: float
            ) -> dict:
    """The result record of an evaluation of ``rows`` = ``(start, stop)`` (docs/evaluation.md)."""
    from kifunet.data_prep import profiles

    start, stop = rows
    total = stop - start
    if predictor.reads_profile:
        settings = {**settings, "profile": profiles.fields_text(fields)}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "run": predictor.info,
        "dataset": {"path": os.path.abspath(reader.root), "split": reader.split, "rows": len(reader),
                    "evaluated": total, "ranges": [[start, stop]],
                    "spec": dataset_spec(reader.manifest, reader.split)},
        "settings": settings,
        "results": {m: a.to_dict() for m, a in acc.items() if m in MODES},
        **({"heads": acc["heads"].to_dict()} if "heads" in acc else {}),
        "seconds": seconds,
        "positions_per_second": total / seconds if seconds > 0 else None,
        "devices": predictor.devices,
    }


def _value_keys(value, batch: dict) -> dict:
    """The ``value`` / ``outcome`` arguments of :meth:`kifunet.eval.metrics.Breakdown.update` (none for a
    policy-only net; a split without the ``outcome`` column counts every position unknown)."""
    if value is None:
        return {}
    from kifunet.data_prep.results import OUTCOME_UNKNOWN

    outcome = batch.get("outcome")
    if outcome is None:
        outcome = np.full(len(value), OUTCOME_UNKNOWN, np.int64)
    return {"value": value, "outcome": outcome}


class ResultError(UserError, ValueError):
    """A file that is not an eval result (:func:`load_result`), or results that cannot be merged
    (:func:`merge_results`)."""


def merge_results(results: list[dict]) -> dict:
    """One result from results of the same run on disjoint parts of the same split (``evaluate(start=...,
    limit=...)``, ``kifunet eval --start/--limit``, ``kifunet eval --merge``): sums and counts are added, so the
    merge of parts that cover the split equals the whole-split evaluation. Refuses results of another checkpoint,
    dataset, split or setting, and overlapping parts (:class:`ResultError`)."""
    if not results:
        raise ResultError("nothing to merge")
    first = results[0]
    same = lambda r: (r["run"].get("checkpoint"), r["dataset"]["path"], r["dataset"]["split"],  # noqa: E731
                      r["dataset"]["spec"].get("fingerprint"), sorted(r["results"]),
                      {k: v for k, v in r["settings"].items() if k not in ("batch_size", "limit")})
    for r in results[1:]:
        if same(r) != same(first):
            raise ResultError("cannot merge results of different checkpoints, datasets, splits or settings")
    ranges = sorted(tuple(x) for r in results for x in r["dataset"].get("ranges", [[0, r["dataset"]["evaluated"]]]))
    for (a0, a1), (b0, b1) in zip(ranges, ranges[1:]):
        if b0 < a1:
            raise ResultError(f"parts overlap: rows {a0}..{a1 - 1} and {b0}..{b1 - 1}")
    joined = []
    for a, b in ranges:  # adjacent parts read as one range
        if joined and joined[-1][1] == a:
            joined[-1][1] = b
        else:
            joined.append([a, b])
    out = json.loads(json.dumps(first))
    out["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    out["dataset"]["ranges"] = joined
    out["dataset"]["evaluated"] = sum(b - a for a, b in joined)
    out["settings"]["limit"] = None if joined == [[0, first["dataset"]["rows"]]] else out["dataset"]["evaluated"]
    out["results"] = {m: M.merge_breakdown_dicts([r["results"][m] for r in results]) for m in first["results"]}
    out["seconds"] = sum(float(r.get("seconds") or 0.0) for r in results)
    out["positions_per_second"] = out["dataset"]["evaluated"] / out["seconds"] if out["seconds"] > 0 else None
    if all("heads" in r for r in results):
        from kifunet.eval import head_metrics

        out["heads"] = head_metrics.merge([r["heads"] for r in results])
    out["merged_from"] = len(results)
    return out


def save_result(result: dict, path: str) -> None:
    store.makedirs(os.path.dirname(store.resolve(path)))  # a local folder; a URL (a bucket) needs none
    with atomic.atomic_path(path) as tmp, naming(tmp), open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, allow_nan=True)  # a full disk: no half-written temporary left behind
        f.write("\n")


def load_result(path: str) -> dict:
    """The result JSON at ``path`` (:class:`ResultError` when the file is not one; ``OSError`` when unreadable)."""
    with open(path, encoding="utf-8") as f:
        try:
            res = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultError(f"{path} is not a kifunet eval result (not JSON: {e})") from None
    fmt = res.get("format") if isinstance(res, dict) else None
    if fmt != FORMAT:
        raise ResultError(f"{path} is not a kifunet eval result (format {fmt!r})")
    version = res.get("format_version", 1)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ResultError(f"{path}: eval result format version {version!r} is newer than this kifunet reads "
                         f"({FORMAT_VERSION})")
    return res


# ---------------------------------------------------------------------------------------------- printing
def _pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def _row(label: str, d: dict) -> list[str]:
    acc = d["accuracy"]
    return [label, str(d["count"]), _pct(acc["1"]), _pct(acc["2"]), _pct(acc["3"]), _pct(acc["4"]), _pct(acc["5"]),
            _pct(acc["10"]), f"{d['cross_entropy_nats']:.4f}", f"{d['perplexity']:.2f}"]


#: each breakdown of a result block and the title of its table
BREAKDOWN_TITLES = {"by_phase": "move number", "by_rank": "player rank", "by_colour": "colour", "by_year": "year",
                    "by_source": "source", "by_time_control": "time control"}
HEADER = ["", "positions", "top-1%", "top-2%", "top-3%", "top-4%", "top-5%", "top-10%", "CE nats", "perplexity"]
VALUE_HEADER = ["", "known results", "value MSE", "constant MSE", "winner %", "decided"]


def _num(x, fmt: str = ".4f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _value_row(label: str, v: dict) -> list[str]:
    return [label, str(v["known"]), _num(v["mse"]), _num(v["baseline_mse"]), _pct(v["winner_accuracy"]),
            str(v["decided"])]


def value_summary(v: dict) -> str:
    """One line for a value block: ``value MSE 0.7012 (constant predictor 0.9973), winner 63.10% of 1,204 decided
    positions; 1,250 with a known result``."""
    if not v["known"]:
        return "value head: no position with a known game result (a dataset built before results were read?)"
    return (f"value MSE {_num(v['mse'])} (constant predictor {_num(v['baseline_mse'])}), winner "
            f"{_pct(v['winner_accuracy'])}% of {v['decided']:,} decided positions; {v['known']:,} with a known result")


def format_result(res: dict, *, breakdowns: bool = True) -> str:
    """A plain-text report of one result: the dataset spec, then overall and per-group tables."""
    ds, st = res["dataset"], res["settings"]
    lines = [f"run: {res['run'].get('name') or res['run'].get('model', '?')}  "
             f"({res['run'].get('feature_set')}, {res['run'].get('params', '?')} params)",
             f"data: {ds['path']} split {ds['split']}: {ds['evaluated']} of {ds['rows']} positions"
             + (f" (rows {', '.join(f'{a}..{b - 1}' for a, b in ds['ranges'])})"
                if ds.get("ranges") and ds["evaluated"] < ds["rows"] else ""),
             f"spec: {ds['spec']['text']}",
             f"legal mask: {'on (' + str(st['legal_source']) + ')' if st['legal_mask'] else 'off'}; "
             f"ties: {st['tie_rule']}"
             + (f"; the net told every mover is {ranks.rank_to_text(st['as_rank'])}"
                if st.get("as_rank") is not None else ""), ""]
    rows = [_row(MODE_TEXT[m], res["results"][m]) for m in MODES if m in res["results"]]
    lines.append(_table(HEADER, rows))
    if res.get("heads"):
        from kifunet.eval import head_metrics

        lines += [""] + head_metrics.summary(res["heads"]) + ["(single pass; eval/head_metrics.py has the rules)"]
    valued = [m for m in MODES if m in res["results"] and "value" in res["results"][m]]
    if valued:
        lines += ["", "value head (MSE over positions with a known result, draws as 0; winner % over those with a "
                  "winner; constant: always the mean result):"]
        lines.append(_table(VALUE_HEADER, [_value_row(MODE_TEXT[m], res["results"][m]["value"]) for m in valued]))
    if breakdowns:
        for m in MODES:
            if m not in res["results"]:
                continue
            r = res["results"][m]
            for part, title in BREAKDOWN_TITLES.items():
                if not r.get(part):  # a profile breakdown of a version 1 or 2 result: none
                    continue
                lines += ["", f"{MODE_TEXT[m]}, by {title}:"]
                lines.append(_table([title] + HEADER[1:], [_row(k, v) for k, v in r[part].items()]))
            if m in valued:
                lines += ["", f"{MODE_TEXT[m]}, value head by move number:"]
                lines.append(_table(["move number"] + VALUE_HEADER[1:],
                                    [_value_row(k, v["value"]) for k, v in r["by_phase"].items() if "value" in v]))
    return "\n".join(lines)
