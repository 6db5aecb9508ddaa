"""The published results we report against, as data: ``eval/published.toml`` (every row of docs/published.md).

:func:`move_prediction` gives one :class:`Result` per net and number, each with its dataset and spec. Percentages
are as printed, a range ``57.1-57.6%`` as ``[57.1, 57.6]``; tables: ``[datasets.<id>]``, ``[[move_prediction]]``
(``steps`` in training positions), ``[[strength]]``, ``[[rank_conditioning]]``, ``[[accuracy_nats]]``,
``[[conventions]]`` and their ``*_notes``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "published.toml")
EVAL_MODES = ("single", "ensemble")


@dataclasses.dataclass(frozen=True)
class Dataset:
    id: str
    name: str
    spec: str
    kifunet_preset: str | None = None


@dataclasses.dataclass(frozen=True)
class Result:
    id: str
    source: str
    dataset: Dataset
    inputs: str
    net: str
    eval: str
    params: int | tuple[int, ...] | None = None
    params_approx: bool = False
    params_secondary: bool = False
    top1: float | tuple[float, float] | None = None
    top4: float | tuple[float, float] | None = None
    top10: float | tuple[float, float] | None = None
    ce: float | None = None
    steps: int | None = None
    steps_secondary: bool = False
    approx: tuple[str, ...] = ()
    secondary: bool = False
    note: str = ""


def _tuple(v):
    return tuple(v) if isinstance(v, list) else v


@functools.lru_cache(maxsize=None)
def load(path: str = DATA_FILE) -> dict:
    """The raw TOML tables (cached)."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def datasets(path: str = DATA_FILE) -> dict[str, Dataset]:
    return {k: Dataset(id=k, **v) for k, v in load(path)["datasets"].items()}


def move_prediction(path: str = DATA_FILE) -> list[Result]:
    """Every published move-prediction number, one :class:`Result` per net, dataset and evaluation mode."""
    ds = datasets(path)
    out = []
    fields = {f.name for f in dataclasses.fields(Result)}
    for row in load(path)["move_prediction"]:
        unknown = set(row) - fields
        if unknown:
            raise ValueError(f"{path}: row {row.get('id')}: unknown keys {sorted(unknown)}")
        if row["eval"] not in EVAL_MODES:
            raise ValueError(f"{path}: row {row['id']}: eval must be one of {EVAL_MODES}")
        kw = {k: _tuple(v) for k, v in row.items()}
        kw["dataset"] = ds[row["dataset"]]
        out.append(Result(**kw))
    ids = [r.id for r in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate ids")
    return out


def strength(path: str = DATA_FILE) -> list[dict]:
    return list(load(path)["strength"])


def rank_conditioning(path: str = DATA_FILE) -> list[dict]:
    return list(load(path)["rank_conditioning"])


def accuracy_nats(path: str = DATA_FILE) -> list[dict]:
    """GoNN's (top-1 %, CE nats, relative Elo) points, in the order printed."""
    return list(load(path)["accuracy_nats"])


def conventions(path: str = DATA_FILE) -> list[dict]:
    return list(load(path)["conventions"])


def fmt_pct(v) -> str:
    """``55.2`` -> ``'55.2'``; ``(57.1, 57.6)`` -> ``'57.1-57.6'``; None -> ``'-'``."""
    if v is None:
        return "-"
    if isinstance(v, tuple):
        return "-".join(f"{x:.1f}" for x in v)
    return f"{v:.1f}"


def fmt_params(r: Result) -> str:
    if r.params is None:
        return "-"
    vals = r.params if isinstance(r.params, tuple) else (r.params,)
    txt = " / ".join(f"{v:,}" for v in vals)
    if r.params_approx:
        txt = "~" + txt
    return txt + (" (secondary)" if r.params_secondary else "")


def fmt_steps(n, secondary: bool = False) -> str:
    if n is None:
        return "-"
    txt = f"{n / 1e6:.4g}M" if n >= 1e6 else f"{n:,}"
    return txt + (" (secondary)" if secondary else "")
