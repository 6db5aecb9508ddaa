"""Which games and which positions a build keeps: game filters, move filters, presets and config files.

:class:`Filters` holds the options; a game gets the first failing game filter as its reason in ``filtered``, a
position the first failing move filter in ``positions.filtered``, and unknown ranks fail every rank threshold.
Precedence is preset (:data:`PRESETS`) < config file < command-line flags. The reasons in order, the presets and
the config keys: docs/building.md ("Inputs, filters and splits").
"""

from __future__ import annotations

import calendar
import dataclasses
import json
import re
import tomllib

import numpy as np

from ..errors import InvalidValue
from ..game import GameInfo, GameRecord
from ..ranks import UNKNOWN, parse_rank, rank_to_text
from ..results import UNKNOWN_KINDS, kind_names

GAME_REASONS = ("board_size", "handicap", "game_rank", "no_date", "date_range", "too_short", "result_unknown",
                "ended_other", "no_split", "no_positions", "duplicate")
RESULT_CHOICES = ("any", "known")  # the ``result`` filter
MOVE_REASONS = ("pass", "skip_first", "min_rank", "min_opponent_rank")

_DATE_RE = re.compile(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?")


def rank_value(text) -> int | None:
    """``'6d'`` -> 5; ints pass through; ``None``/``''`` -> None. A string that is no rank raises ValueError."""
    if text is None or text == "":
        return None
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        return int(text)
    v = parse_rank(str(text))
    if v == UNKNOWN:
        raise InvalidValue(f"not a rank: {text!r} (write it like 6d, 3k or 1p)")
    return v


def rank_text(v: int | None) -> str | None:
    return None if v is None else rank_to_text(int(v))


def game_date(info: GameInfo) -> str | None:
    """The game's first date as ``YYYY-MM-DD`` (``00`` for a missing month or day), or None."""
    m = _DATE_RE.search(info.date or "")
    if m is None:
        if info.year:
            return f"{int(info.year):04d}-00-00"
        return None
    y, mo, d = m.group(1), m.group(2) or "0", m.group(3) or "0"
    return f"{int(y):04d}-{int(mo):02d}-{int(d):02d}"


def parse_date_bound(text: str | None, *, upper: bool) -> str | None:
    """``2015`` / ``2015-06`` / ``2015-06-30`` -> ``YYYY-MM-DD``; a partial upper bound covers the whole period.
    ``ValueError`` (one line, naming the text) for anything else, a month outside 1..12 or a day its month lacks
    (``2015-13``, ``2015-02-30``; leap years counted)."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?", str(text).strip())
    if m is None:
        raise InvalidValue(f"not a date: {text!r} (write YYYY, YYYY-MM or YYYY-MM-DD)")
    y = int(m.group(1))
    if m.group(2) and not 1 <= int(m.group(2)) <= 12:
        raise InvalidValue(f"not a date: {text!r} (month {int(m.group(2))} is not 1..12)")
    if m.group(3):
        last = calendar.monthrange(max(y, 1), int(m.group(2)))[1]
        if not 1 <= int(m.group(3)) <= last:
            raise InvalidValue(f"not a date: {text!r} ({calendar.month_name[int(m.group(2))]} {y} has days 1..{last})")
    mo = int(m.group(2)) if m.group(2) else (99 if upper else 0)
    d = int(m.group(3)) if m.group(3) else (99 if upper else 0)
    return f"{y:04d}-{mo:02d}-{d:02d}"


@dataclasses.dataclass
class Filters:
    """Game and move filters (see the module docstring). Ranks are values on the ranks scale."""

    board_size: int = 19
    no_handicap: bool = False
    min_both_rank: int | None = None
    min_either_rank: int | None = None
    date_from: str | None = None  # YYYY-MM-DD
    date_to: str | None = None
    min_moves: int = 0
    result: str = "any"  # "known": drop games whose result is unknown or void (result_unknown)
    ended: tuple[str, ...] | None = None  # result kinds kept (ended_other); None: any
    dedupe: bool = True
    skip_first: int = 0
    include_passes: bool = False
    min_rank: int | None = None
    min_opponent_rank: int | None = None

    def __post_init__(self):
        if self.result not in RESULT_CHOICES:
            raise InvalidValue(f"result must be one of {', '.join(RESULT_CHOICES)}, got {self.result!r}")
        if self.ended is not None:
            self.ended = kind_names(self.ended)

    # -- game level --------------------------------------------------------------------------------------
    def game_reason(self, record: GameRecord) -> str | None:
        """The first game filter ``record`` fails (a key of GAME_REASONS), or None if it passes them all.

        ``no_split``, ``no_positions`` and ``duplicate`` are decided elsewhere (splits, move filters, dedupe)."""
        info = record.info
        if record.size != self.board_size:
            return "board_size"
        if self.no_handicap and (info.handicap or 0) >= 2:
            return "handicap"
        if not self._ranks_ok(info):
            return "game_rank"
        if self.date_from is not None or self.date_to is not None:
            d = game_date(info)
            if d is None:
                return "no_date"
            if (self.date_from is not None and d < self.date_from) or (self.date_to is not None and d > self.date_to):
                return "date_range"
        if record.num_moves < self.min_moves:
            return "too_short"
        if self.result == "known" and info.result_kind in UNKNOWN_KINDS:
            return "result_unknown"
        if self.ended is not None and info.result_kind not in self.ended:
            return "ended_other"
        return None

    def _ranks_ok(self, info: GameInfo) -> bool:
        b, w = _known(info.black_rank), _known(info.white_rank)
        both = either = None
        if self.min_both_rank is not None:
            both = b is not None and w is not None and min(b, w) >= self.min_both_rank
        if self.min_either_rank is not None:
            either = any(r is not None and r >= self.min_either_rank for r in (b, w))
        if both is None and either is None:
            return True
        return bool(both) or bool(either)

    # -- move level --------------------------------------------------------------------------------------
    def move_reasons(self, target: np.ndarray, move_number: np.ndarray, player_rank: np.ndarray,
                     opponent_rank: np.ndarray, pass_index: int) -> np.ndarray:
        """Per position: 0 = kept, else 1 + index into MOVE_REASONS of the first move filter that drops it."""
        out = np.zeros(len(target), dtype=np.int8)
        checks = [
            (None if self.include_passes else np.asarray(target) == pass_index),
            (np.asarray(move_number) <= self.skip_first) if self.skip_first > 0 else None,
            (np.asarray(player_rank).astype(np.int16) < self.min_rank) if self.min_rank is not None else None,
            ((np.asarray(opponent_rank).astype(np.int16) < self.min_opponent_rank)
             if self.min_opponent_rank is not None else None),
        ]
        for i, hit in enumerate(checks):
            if hit is not None:
                out[(out == 0) & hit] = i + 1
        return out

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        for k in ("min_both_rank", "min_either_rank", "min_rank", "min_opponent_rank"):
            d[k] = rank_text(d[k])
        return d


def _known(r) -> int | None:
    return None if r is None or int(r) == UNKNOWN else int(r)


# ------------------------------------------------------------------------------------------------------------
# presets and config files

PRESETS: dict[str, dict] = {
    # GoNN's KGS protocol (docs/gonn.md section 1): games where both players are >= 6d or one is >= 7d,
    # no handicap, only moves by >= 6d players; train on 2000-2014, test on 2015.
    "gonn-kgs": {
        "board_size": 19,
        "min_both_rank": "6d",
        "min_either_rank": "7d",
        "no_handicap": True,
        "min_rank": "6d",
        "splits": ["train:2000-2014", "test:2015"],
        "source": "kgs",
    },
    # GoNN's GoGoD protocol (docs/gonn.md section 1; Cazenave 2017 the same dates): GoGoD, train on 1900-2014,
    # test on 2015-2016. No rank or handicap filter: GoGoD records professional games (GoNN forced every
    # GoGoD rank to 9d), so every move is kept.
    "gonn-gogod": {
        "board_size": 19,
        "splits": ["train:1900-2014", "test:2015-2016"],
        "source": "gogod",
    },
    # Fox professional games as a test domain (docs/building.md says why each key).
    "fox-pro": {
        "board_size": 19,
        "no_handicap": True,
        "min_either_rank": "1p",
        "min_rank": "1p",
        "splits": ["test:rest"],
        "source": "fox",
    },
}

FILTER_KEYS = tuple(f.name for f in dataclasses.fields(Filters))
RANK_KEYS = ("min_both_rank", "min_either_rank", "min_rank", "min_opponent_rank")
CONFIG_KEYS = FILTER_KEYS + ("preset", "splits", "val_fraction", "source")


def load_config_file(path: str) -> dict:
    """Read a ``.json`` or ``.toml`` build config (keys: CONFIG_KEYS; ``-`` in keys is read as ``_``)."""
    with open(path, "rb") as f:
        raw = f.read()
    if path.lower().endswith(".toml"):
        cfg = tomllib.loads(raw.decode("utf-8"))
    else:
        cfg = json.loads(raw.decode("utf-8"))
    if not isinstance(cfg, dict):
        raise InvalidValue(f"{path}: a config file holds one table/object of options")
    cfg = {k.replace("-", "_"): v for k, v in cfg.items()}
    unknown = sorted(set(cfg) - set(CONFIG_KEYS))
    if unknown:
        raise InvalidValue(f"{path}: unknown config keys {unknown}; known: {', '.join(CONFIG_KEYS)}")
    return cfg


def resolve(preset: str | None = None, config: dict | None = None, overrides: dict | None = None) -> dict:
    """Merge preset < config < overrides (None values in overrides mean "not given") into one option dict."""
    merged: dict = {}
    config = dict(config or {})
    preset = (overrides or {}).get("preset") or config.get("preset") or preset
    if preset:
        if preset not in PRESETS:
            raise InvalidValue(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
        merged.update(PRESETS[preset])
        merged["preset"] = preset
    merged.update({k: v for k, v in config.items() if k != "preset"})
    for k, v in (overrides or {}).items():
        if v is not None and k != "preset":
            merged[k] = v
    return merged


def source_from_options(opts: dict) -> str | None:
    """The declared source of a resolved option dict (``source``: one of
    :data:`kifunet.data_prep.profiles.SOURCES`, the preset's or ``--source``), None when none is declared;
    ``ValueError`` naming the known ones for another value."""
    from ..profiles import SOURCES

    v = opts.get("source")
    if v is None:
        return None
    if v not in SOURCES:
        raise InvalidValue(f"source {v!r}: one of {', '.join(SOURCES)}")
    return str(v)


def filters_from_options(opts: dict) -> Filters:
    """A Filters from a resolved option dict (rank strings and dates parsed, unknown keys ignored)."""
    kw = {}
    for k in FILTER_KEYS:
        if k not in opts or opts[k] is None:
            continue
        v = opts[k]
        if k in RANK_KEYS:
            v = rank_value(v)
        elif k == "date_from":
            v = parse_date_bound(v, upper=False)
        elif k == "date_to":
            v = parse_date_bound(v, upper=True)
        elif k == "result":
            v = str(v)
        elif k == "ended":
            try:
                v = kind_names(v)
            except ValueError as e:
                raise InvalidValue(f"ended: {e}") from None
        elif k in ("board_size", "min_moves", "skip_first"):
            try:
                v = int(v)
            except (TypeError, ValueError) as e:  # an options file's value that is not a whole number
                raise InvalidValue(f"{k}: {e}") from None
            if v < 0 or (k == "board_size" and not 2 <= v <= 19):
                raise InvalidValue(f"{k} out of range: {v}")
        else:
            v = bool(v)
        kw[k] = v
    return Filters(**kw)
