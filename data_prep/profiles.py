"""Game profiles: who played a move, when, where and how, and their encoding as one float vector.

A :class:`Profile` holds what a record says about the position's game, each field optional (``None`` = unknown);
:func:`encode` turns it into :data:`SIZE` = 46 float32 numbers, every unknown field all zeros but its own flag. The
fields, where they are read from and the vector's layout are tabled in docs/profiles.md ("The encoding").
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re

import numpy as np

from kifunet.data_prep import ranks
from kifunet.data_prep.errors import InvalidValue

SOURCES = ("kgs", "fox", "ogs", "tygem", "gogod", "go4go", "other")
TIME_CONTROLS = ("blitz", "fast", "normal", "slow", "correspondence")
PERIODS_YEARS = (2, 4, 8, 16, 32, 64)
RANK_BANDS = ("kyu_10_plus", "kyu_1_9", "dan_1_4", "dan_5_9", "pro")
SIZE = 7 + 7 + 2 * len(PERIODS_YEARS) + 2 + len(SOURCES) + 1 + len(TIME_CONTROLS) + 1 + 2 + 2
OFFSETS = {"rank": 0, "opponent_rank": 7, "date": 14, "source": 28, "time_control": 36, "handicap": 42,
           "komi": 44}
_EPOCH = datetime.date(1970, 1, 1)
_DAYS_PER_YEAR = 365.25
_TIME_LIMITS = (600.0, 1800.0, 5400.0, 86400.0)  # blitz < 10 min <= fast < 30 <= normal < 90 <= slow < 1 day


@dataclasses.dataclass(frozen=True)
class Profile:
    """What is known of a position's game (``None``: unknown); see the module docstring's table."""

    rank: int | None = None
    opponent_rank: int | None = None
    date: int | None = None
    source: str | None = None
    time_control: str | None = None
    handicap: int = 0
    komi: float | None = None

    def __post_init__(self):
        for name in ("rank", "opponent_rank"):
            v = getattr(self, name)
            if v is not None and not ranks.MIN <= int(v) <= ranks.MAX:
                raise InvalidValue(f"{name} {v} is not a rank (the scale runs {ranks.MIN}..{ranks.MAX})")
        if self.source is not None and self.source not in SOURCES:
            raise InvalidValue(f"source {self.source!r}: one of {', '.join(SOURCES)}")
        if self.time_control is not None and self.time_control not in TIME_CONTROLS:
            raise InvalidValue(f"time control {self.time_control!r}: one of {', '.join(TIME_CONTROLS)}")
        if not 0 <= int(self.handicap) <= 9:
            raise InvalidValue(f"handicap {self.handicap}: 0..9 stones")
        if self.komi is not None and not math.isfinite(self.komi):
            raise InvalidValue(f"komi {self.komi} is not a number")


UNKNOWN_PROFILE = Profile()


# ---------------------------------------------------------------------------------------------------- reading
def days_since_epoch(date_text: str | None, year: int | None = None) -> int | None:
    """Days since 1970-01-01 of the first date in an SGF ``DT`` (``2017-01-31``, ``2017-01-31,02-01``,
    ``2017-01``, ``2017``), else of 1 July of ``year``; None when neither gives a date."""
    m = re.match(r"\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", date_text or "")
    y, mo, d = (int(m.group(1)), m.group(2), m.group(3)) if m else (year, None, None)
    if not y or not 1 <= y <= 9999:
        return None
    try:
        day = datetime.date(y, int(mo) if mo else 7, int(d) if d else 1)
    except ValueError:  # month 13, 31 February: the year alone
        day = datetime.date(y, 7, 1)
    return (day - _EPOCH).days


# a source's marks: words, not letters inside words ("ogs" is not in "blogs")
_SOURCE_MARKS = tuple((name, re.compile(rf"(?<![a-z]){pattern}(?![a-z])")) for name, pattern in (
    ("kgs", r"(?:gokgs|kgs|kiseido go server)"), ("fox", r"(?:foxwq|fox|野狐)"), ("ogs", r"(?:online-go|ogs)"),
    ("tygem", r"(?:tygem|타이젬)"), ("gogod", r"gogod"), ("go4go", r"go4go")))


def source_of(place: str = "", application: str = "", path: str = "") -> str | None:
    """The server or collection a record comes from: the first of :data:`SOURCES` whose mark (a word: ``kgs``,
    ``gokgs``, ``fox``, ``foxwq``, ``ogs``, ``online-go``, ``tygem``, ``gogod``, ``go4go``) is in its ``PC``, then
    its ``AP``, then its path (case-insensitive); None when nothing names one."""
    for text in (place, application, path):
        t = (text or "").casefold()
        for name, mark in _SOURCE_MARKS:
            if mark.search(t):
                return name
    return None


def _seconds(text: str) -> float | None:
    t = (text or "").strip().casefold()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|sec|seconds?|m|min|minutes?|h|hours?)?", t)
    if not m:
        return None
    unit = (m.group(2) or "s")[0]
    return float(m.group(1)) * {"s": 1.0, "m": 60.0, "h": 3600.0}[unit]


def overtime_seconds_per_move(text: str) -> float | None:
    """Seconds a move of ``OT``: byo-yomi ``5x30 byo-yomi`` -> 30, Canadian ``25/600 Canadian`` -> 24, ``0``
    or ``none`` -> 0 (absolute time); None for text it does not read."""
    t = (text or "").strip().casefold()
    if t in ("", "none", "0", "absolute"):
        return 0.0 if t else None
    m = re.match(r"(\d+)\s*[x×*]\s*(\d+(?:\.\d+)?)\s*(?:s|sec)?\b.*byo", t)
    if m:
        return float(m.group(2))
    m = re.match(r"(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*(?:s|sec)?\b.*canad", t)
    if m and int(m.group(1)) > 0:
        return float(m.group(2)) / int(m.group(1))
    m = re.match(r"(\d+(?:\.\d+)?)\s*(?:s|sec)?\s*fischer", t)
    if m:
        return float(m.group(1))
    return None


def time_control_of(main_time: str = "", overtime: str = "") -> str | None:
    """The class of :data:`TIME_CONTROLS` of ``TM`` (seconds) and ``OT`` (module docstring), None when unknown."""
    main = _seconds(main_time) if (main_time or "").strip() else None
    per_move = overtime_seconds_per_move(overtime) if (overtime or "").strip() else None
    if main is None and per_move is None:
        return None
    total = (main or 0.0) + 100 * (per_move or 0.0)
    for name, limit in zip(TIME_CONTROLS, _TIME_LIMITS):
        if total < limit:
            return name
    return TIME_CONTROLS[-1]


def profile_of(info, colour: int, *, source: str | None = None) -> Profile:
    """The profile of a move by ``colour`` in the game ``info`` (a :class:`kifunet.data_prep.game.GameInfo`);
    ``source`` (a build's declaration) wins over :func:`source_of` of the record."""
    from kifunet.data_prep.game import BLACK, WHITE

    if colour not in (BLACK, WHITE):
        raise ValueError(f"colour {colour}: BLACK ({BLACK}) or WHITE ({WHITE})")
    mine, theirs = (info.black_rank, info.white_rank) if colour == BLACK else (info.white_rank, info.black_rank)
    known = lambda r: int(r) if ranks.is_known(int(r)) else None  # noqa: E731
    komi = info.komi if info.komi is not None and math.isfinite(info.komi) and abs(info.komi) <= 1000 else None
    overtime = info.overtime
    if not overtime and info.periods and info.period_time:  # Fox: TC periods of TT seconds
        overtime = f"{info.periods}x{info.period_time} byo-yomi"
    return Profile(rank=known(mine), opponent_rank=known(theirs), date=days_since_epoch(info.date, info.year),
                   source=source or source_of(info.place, info.application, info.path),
                   time_control=time_control_of(info.time_limit, overtime),
                   handicap=min(max(int(info.handicap or 0), 0), 9), komi=komi)


# ---------------------------------------------------------------------------------------------------- encoding
def _strength(rank: int) -> float:
    if rank <= 8:
        return float(rank + 1)  # 30k = -29 .. 1k = 0, 1d = 1 .. 9d = 9
    return 9.0 + 0.25 * (rank - 8)  # 1p = 9.25 .. 9p = 11.25


def _band(rank: int) -> int:
    if rank <= -10:
        return 0
    if rank < 0:
        return 1
    if rank <= 3:
        return 2
    if rank <= 8:
        return 3
    return 4


def _rank_part(out: np.ndarray, rank: int | None) -> None:
    if rank is None:
        out[6] = 1.0
        return
    out[0] = _strength(int(rank)) / 10.0
    out[1 + _band(int(rank))] = 1.0


def encode(p: Profile) -> np.ndarray:
    """The float32 vector of ``p`` (:data:`SIZE` numbers; the module docstring's table)."""
    v = np.zeros(SIZE, np.float32)
    _rank_part(v[0:7], p.rank)
    _rank_part(v[7:14], p.opponent_rank)
    d = v[14:28]
    if p.date is None:
        d[13] = 1.0
    else:
        years = p.date / _DAYS_PER_YEAR
        for i, period in enumerate(PERIODS_YEARS):
            d[2 * i] = math.sin(2 * math.pi * years / period)
            d[2 * i + 1] = math.cos(2 * math.pi * years / period)
        d[12] = (1970.0 + years - 2000.0) / 20.0
    s = v[28:36]
    s[SOURCES.index(p.source) if p.source is not None else len(SOURCES)] = 1.0
    t = v[36:42]
    t[TIME_CONTROLS.index(p.time_control) if p.time_control is not None else len(TIME_CONTROLS)] = 1.0
    v[42] = p.handicap / 9.0
    v[43] = float(p.handicap > 0)
    if p.komi is None:
        v[45] = 1.0
    else:
        v[44] = (p.komi - 6.5) / 10.0
    return v


# ------------------------------------------------------------------------------------------- rows, as stored
#: the stored codes of a game's fields (games tables, TFDS examples, dataset blocks): ``days`` int32 (days since
#: 1970, :data:`UNKNOWN_DAYS` unknown), ``source`` / ``time_control`` int8 (index of :data:`SOURCES` /
#: :data:`TIME_CONTROLS`, :data:`UNKNOWN_CODE` unknown), ``handicap`` int8 (stones), ``komi`` float32 (NaN unknown)
UNKNOWN_DAYS = np.iinfo(np.int32).min
UNKNOWN_CODE = -1
#: the per-row columns a dataset gives for the profile (:meth:`DatasetSplit.with_profile`), besides the ranks
GAME_FIELDS = ("game_days", "game_source", "game_time_control", "game_handicap", "game_komi")
GAME_FIELD_DTYPES = {"game_days": np.int32, "game_source": np.int8, "game_time_control": np.int8,
                     "game_handicap": np.int8, "game_komi": np.float32}


def codes_of(p: Profile) -> dict:
    """The stored codes of ``p``'s game fields (keys :data:`GAME_FIELDS`)."""
    return {"game_days": UNKNOWN_DAYS if p.date is None else int(p.date),
            "game_source": UNKNOWN_CODE if p.source is None else SOURCES.index(p.source),
            "game_time_control": UNKNOWN_CODE if p.time_control is None else TIME_CONTROLS.index(p.time_control),
            "game_handicap": int(p.handicap), "game_komi": np.nan if p.komi is None else float(p.komi)}


def _rank_rows(rank: np.ndarray) -> np.ndarray:
    r = np.asarray(rank).astype(np.int64)
    known = (r >= ranks.MIN) & (r <= ranks.MAX)
    out = np.zeros((len(r), 7), np.float32)
    strength = np.where(r <= 8, r + 1.0, 9.0 + 0.25 * (r - 8))
    band = np.select([r <= -10, r < 0, r <= 3, r <= 8], [0, 1, 2, 3], 4)
    rows = np.flatnonzero(known)
    out[rows, 0] = strength[rows] / 10.0
    out[rows, 1 + band[rows]] = 1.0
    out[~known, 6] = 1.0
    return out


def _one_hot(code: np.ndarray, n: int) -> np.ndarray:
    c = np.asarray(code).astype(np.int64)
    c = np.where((c >= 0) & (c < n), c, n)  # unknown (or a code this kifunet does not know): the flag
    out = np.zeros((len(c), n + 1), np.float32)
    out[np.arange(len(c)), c] = 1.0
    return out


def encode_rows(player_rank, opponent_rank, game_days, game_source, game_time_control, game_handicap,
                game_komi) -> np.ndarray:
    """:func:`encode` of many rows at once from stored codes (ranks, unknown ``ranks.UNKNOWN``; game fields as
    :data:`GAME_FIELDS` store them): float32 ``[R, SIZE]``. Handicap is clipped to 0..9."""
    player_rank = np.asarray(player_rank)
    n = len(player_rank)
    out = np.zeros((n, SIZE), np.float32)
    out[:, 0:7] = _rank_rows(player_rank)
    out[:, 7:14] = _rank_rows(opponent_rank)
    days = np.asarray(game_days).astype(np.int64)
    known = days != UNKNOWN_DAYS
    years = days / _DAYS_PER_YEAR
    d = out[:, 14:28]
    for i, period in enumerate(PERIODS_YEARS):
        d[:, 2 * i] = np.where(known, np.sin(2 * np.pi * years / period), 0.0)
        d[:, 2 * i + 1] = np.where(known, np.cos(2 * np.pi * years / period), 0.0)
    d[:, 12] = np.where(known, (1970.0 + years - 2000.0) / 20.0, 0.0)
    d[:, 13] = ~known
    out[:, 28:36] = _one_hot(game_source, len(SOURCES))
    out[:, 36:42] = _one_hot(game_time_control, len(TIME_CONTROLS))
    h = np.clip(np.asarray(game_handicap).astype(np.int64), 0, 9)
    out[:, 42] = h / 9.0
    out[:, 43] = h > 0
    komi = np.asarray(game_komi, np.float64)
    ok = np.isfinite(komi) & (np.abs(np.nan_to_num(komi)) <= 1000)
    out[:, 44] = np.where(ok, (np.nan_to_num(komi) - 6.5) / 10.0, 0.0)
    out[:, 45] = ~ok
    return out


#: the slice of the vector each :class:`Profile` field owns (what an override replaces)
FIELD_SLICES = {"rank": slice(0, 7), "opponent_rank": slice(7, 14), "date": slice(14, 28),
                "source": slice(28, 36), "time_control": slice(36, 42), "handicap": slice(42, 44),
                "komi": slice(44, 46)}


def override_rows(vectors: np.ndarray, fields: dict) -> np.ndarray:
    """``vectors`` ``[R, SIZE]`` with the fields named in ``fields`` (a :func:`parse_fields` result) replaced on
    every row by their encoding, the others kept: ``kifunet eval --profile year=2005`` forces the date and keeps
    each row's own ranks, source and time control."""
    if not fields:
        return vectors
    forced = encode(Profile(**fields))
    out = np.array(vectors, np.float32, copy=True)
    for name in fields:
        out[:, FIELD_SLICES[name]] = forced[FIELD_SLICES[name]]
    return out


def parse(text: str) -> Profile:
    """A profile from ``key=value`` pairs separated by commas, as the command line takes it: ``rank=7d``,
    ``opponent_rank=5d``, ``date=2016-03-09`` (or ``year=2010``), ``source=kgs``, ``time=fast``, ``handicap=2``,
    ``komi=6.5``; keys left out are unknown (``handicap``: 0). A bad key or value is a ``ValueError`` naming it."""
    return Profile(**parse_fields(text))


def fields_text(fields: dict) -> str:
    """``fields`` (a :func:`parse_fields` dict) as :func:`parse` reads it back, in the order of
    :class:`Profile`'s fields whatever order they were given in (``rank=7d,date=2010-07-01,source=kgs``; ``""``:
    none)."""
    order = [f.name for f in dataclasses.fields(Profile)]
    out = []
    for name in sorted(fields, key=order.index):
        v = fields[name]
        if name in ("rank", "opponent_rank"):
            out.append(f"{name}={ranks.rank_to_text(v)}")
        elif name == "date":
            out.append(f"date={(_EPOCH + datetime.timedelta(days=int(v))).isoformat()}")
        elif name == "time_control":
            out.append(f"time={v}")
        else:
            out.append(f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return ",".join(out)


def parse_fields(text: str) -> dict:
    """The :class:`Profile` fields ``text`` gives (:func:`parse`'s syntax), as a dict of only those fields,
    checked as a :class:`Profile` would check them (a ``ValueError`` naming the bad key or value)."""
    fields: dict = {}
    for part in filter(None, (x.strip() for x in (text or "").split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip().casefold(), value.strip()
        if not sep or not value:
            raise InvalidValue(f"profile: {part!r} is not key=value")
        if key in ("rank", "opponent_rank", "opponent"):
            r = ranks.parse_rank(value)
            if r == ranks.UNKNOWN:
                raise InvalidValue(f"profile: {key}={value!r} is not a rank (e.g. 5k, 7d, 9p)")
            fields["opponent_rank" if key != "rank" else "rank"] = r
        elif key in ("date", "year"):
            days = days_since_epoch(value) if key == "date" else (days_since_epoch("", int(value))
                                                                  if value.isdigit() else None)
            if days is None:
                raise InvalidValue(f"profile: {key}={value!r} is not a {'date (YYYY-MM-DD)' if key == 'date' else 'year'}")
            fields["date"] = days
        elif key == "source":
            fields["source"] = value.casefold()
        elif key in ("time", "time_control"):
            fields["time_control"] = value.casefold()
        elif key == "handicap":
            if not value.isdigit():
                raise InvalidValue(f"profile: handicap={value!r} is not a number of stones")
            fields["handicap"] = int(value)
        elif key == "komi":
            try:
                fields["komi"] = float(value)
            except ValueError:
                raise InvalidValue(f"profile: komi={value!r} is not a number") from None
        else:
            raise InvalidValue(f"profile: unknown key {key!r} (rank, opponent_rank, date, year, source, time, "
                             f"handicap, komi)")
    try:
        Profile(**fields)
    except ValueError as e:
        raise InvalidValue(f"profile: {e}") from None
    return fields


# ----------------------------------------------------------------------------------------- a game's stored codes
#: the games-table columns of a game's fields that do not come from another column (issue 33): ``days`` int32,
#: ``source`` / ``time_control`` int8, each its unknown code when the record does not say
GAME_TABLE_COLUMNS = {"days": (np.int32, UNKNOWN_DAYS), "source": (np.int8, UNKNOWN_CODE),
                      "time_control": (np.int8, UNKNOWN_CODE)}


def game_codes(info, *, source: str | None = None) -> dict:
    """The stored codes of game ``info``'s ``days``, ``source``, ``time_control`` (:data:`GAME_TABLE_COLUMNS`), as
    :func:`codes_of` of :func:`profile_of` gives them (``source`` the build's declaration)."""
    from kifunet.data_prep.game import BLACK

    c = codes_of(profile_of(info, BLACK, source=source))
    return {"days": c["game_days"], "source": c["game_source"], "time_control": c["game_time_control"]}


def days_of_dates(dates, years) -> np.ndarray:
    """int32 days since 1970 of many games from their ``DT`` texts and years (0 unknown), :data:`UNKNOWN_DAYS`
    where neither gives a date."""
    dates = ["" if d is None else str(d) for d in dates]
    years = np.asarray(years, np.int64).reshape(-1)
    if len(dates) != len(years):
        raise ValueError(f"{len(dates)} dates but {len(years)} years")
    memo: dict = {}
    out = np.empty(len(dates), np.int32)
    for i, key in enumerate(zip(dates, years.tolist())):
        v = memo.get(key)
        if v is None:
            d = days_since_epoch(key[0], key[1] or None)
            v = memo[key] = UNKNOWN_DAYS if d is None else d
        out[i] = v
    return out


def game_field_rows(days, source, time_control, handicap, komi) -> dict:
    """The :data:`GAME_FIELDS` columns (dtypes :data:`GAME_FIELD_DTYPES`) of games from their stored values, as
    :func:`codes_of` of :func:`profile_of` gives them: handicap clipped to 0..9, a komi beyond +-1000 or not
    finite unknown (NaN)."""
    komi = np.asarray(komi, np.float64)
    ok = np.isfinite(komi) & (np.abs(np.nan_to_num(komi)) <= 1000)
    return {"game_days": np.asarray(days).astype(np.int32),
            "game_source": np.asarray(source).astype(np.int8),
            "game_time_control": np.asarray(time_control).astype(np.int8),
            "game_handicap": np.clip(np.asarray(handicap).astype(np.int64), 0, 9).astype(np.int8),
            "game_komi": np.where(ok, komi, np.nan).astype(np.float32)}
