"""Which split a game lands in: date ranges and deterministic game-hash fractions. One split per game.

Date rules (``--split NAME:RANGES``): ``YYYY``, ``YYYY-YYYY`` or ``FROM..TO`` ranges (inclusive; a partial upper
bound covers its whole period), or ``rest``; ranges of different splits may not overlap. A game no rule covers is
filtered ``no_split``, one without a date ``no_date``; with no date rule every game goes to ``train``. Hash rules
(``--val-fraction F``, ``--hash-split NAME:F[:FROM]``) move a game of split FROM (default ``train``) to NAME when
``sha256("kifunet-split\\0" + moves_hash)`` falls in NAME's slice of [0, 1): the moves alone decide. Several hash
rules take consecutive slices, in order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from .filters import game_date, parse_date_bound
from ..errors import InvalidValue
from ..game import GameInfo

_NAME_RE = re.compile(r"[A-Za-z0-9_\-]+")


@dataclasses.dataclass(frozen=True)
class DateRule:
    name: str
    ranges: tuple[tuple[str, str], ...] = ()  # inclusive (lo, hi) as YYYY-MM-DD strings
    rest: bool = False


@dataclasses.dataclass(frozen=True)
class HashRule:
    name: str
    fraction: float
    source: str = "train"


@dataclasses.dataclass(frozen=True)
class SplitRule:
    dates: tuple[DateRule, ...] = ()
    hashes: tuple[HashRule, ...] = ()

    @property
    def uses_dates(self) -> bool:
        return bool(self.dates)

    def names(self) -> list[str]:
        out = []
        for r in self.dates:
            if r.name not in out:
                out.append(r.name)
        if not self.dates:
            out.append("train")
        for h in self.hashes:
            if h.name not in out:
                out.append(h.name)
        return out

    def assign(self, info: GameInfo, moves_hash: str) -> tuple[str | None, str | None]:
        """(split, None) or (None, filter reason 'no_date' / 'no_split')."""
        split = "train"
        if self.dates:
            d = game_date(info)
            if d is None:
                return None, "no_date"
            split = None
            for r in self.dates:
                if any(lo <= d <= hi for lo, hi in r.ranges):
                    split = r.name
                    break
            if split is None:
                split = next((r.name for r in self.dates if r.rest), None)
            if split is None:
                return None, "no_split"
        if self.hashes:
            u = hash_fraction(moves_hash)
            lo = 0.0
            for h in self.hashes:
                hi = lo + h.fraction
                if h.source == split and lo <= u < hi:
                    return h.name, None
                lo = hi
        return split, None

    def to_json(self) -> dict:
        return {
            "dates": [{"split": r.name, "ranges": [list(x) for x in r.ranges], "rest": r.rest} for r in self.dates],
            "hashes": [dataclasses.asdict(h) for h in self.hashes],
            "hash": "sha256('kifunet-split\\0' + moves_hash), first 8 bytes / 2**64",
            "default": None if self.dates else "train",
        }


def hash_fraction(moves_hash: str) -> float:
    """The game's deterministic position in [0, 1)."""
    d = hashlib.sha256(b"kifunet-split\0" + moves_hash.encode("ascii")).digest()
    return int.from_bytes(d[:8], "big") / 2.0**64


def _parse_range(text: str) -> tuple[str, str]:
    t = text.strip()
    if ".." in t:
        lo, hi = t.split("..", 1)
    elif re.fullmatch(r"\d{4}-\d{4}", t):
        lo, hi = t.split("-")
    else:
        lo = hi = t
    a, b = parse_date_bound(lo, upper=False), parse_date_bound(hi, upper=True)
    if a > b:
        raise InvalidValue(f"empty date range {text!r}")
    return a, b


def parse_date_rules(specs) -> tuple[DateRule, ...]:
    """``['train:2000-2014', 'test:2015']`` -> DateRules; a name may repeat (its ranges are joined)."""
    rules: dict[str, DateRule] = {}
    for spec in specs or ():
        name, sep, body = str(spec).partition(":")
        if not sep or not _NAME_RE.fullmatch(name) or not body.strip():
            raise InvalidValue(f"bad split {spec!r}: write NAME:RANGES, e.g. train:2000-2014 or test:2015")
        old = rules.get(name, DateRule(name))
        ranges, rest = list(old.ranges), old.rest
        for part in body.split(","):
            if part.strip() == "rest":
                rest = True
            else:
                ranges.append(_parse_range(part))
        rules[name] = DateRule(name, tuple(ranges), rest)
    if sum(r.rest for r in rules.values()) > 1:
        raise InvalidValue("only one split can take the rest")
    items = [(lo, hi, r.name) for r in rules.values() for lo, hi in r.ranges]
    for i, (lo1, hi1, n1) in enumerate(items):
        for lo2, hi2, n2 in items[i + 1:]:
            if n1 != n2 and lo1 <= hi2 and lo2 <= hi1:
                raise InvalidValue(f"split date ranges overlap: {n1} {lo1}..{hi1} and {n2} {lo2}..{hi2}")
    return tuple(rules.values())


def parse_hash_rules(specs, val_fraction: float | None = None) -> tuple[HashRule, ...]:
    out = []
    if val_fraction:
        out.append(HashRule("val", float(val_fraction), "train"))
    for spec in specs or ():
        parts = str(spec).split(":")
        if len(parts) not in (2, 3) or not _NAME_RE.fullmatch(parts[0]):
            raise InvalidValue(f"bad hash split {spec!r}: write NAME:FRACTION[:FROM], e.g. val:0.01:train")
        out.append(HashRule(parts[0], float(parts[1]), parts[2] if len(parts) == 3 else "train"))
    total = sum(h.fraction for h in out)
    if any(not 0 < h.fraction < 1 for h in out) or total >= 1:
        raise InvalidValue(f"hash split fractions must be in (0, 1) and sum below 1, got {[h.fraction for h in out]}")
    if len({h.name for h in out}) != len(out):
        raise InvalidValue("a hash split name is given twice")
    return tuple(out)


def make_rule(split_specs=None, hash_specs=None, val_fraction: float | None = None) -> SplitRule:
    dates = parse_date_rules(split_specs)
    hashes = parse_hash_rules(hash_specs, val_fraction)
    date_names = {r.name for r in dates} or {"train"}
    for h in hashes:
        if h.name in date_names:
            raise InvalidValue(f"hash split {h.name!r} is also a date split")
        if h.source not in date_names:
            raise InvalidValue(f"hash split {h.name!r} takes games from {h.source!r}, which is not a split")
    return SplitRule(dates, hashes)
