"""Feature planes: a registry of small functions that declare their plane counts, and the named sets.

:func:`get` turns a set name (``"agz"``, ``"agz+nogo_liberties"``) into a :class:`FeatureSet`; every plane is 0/1,
laid out ``(N, N, C)``. The sets' planes, bucket edges, ``history`` and ``legality`` fields are tabled in
docs/features.md ("The sets as built").
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
from .._jit import njit

from ..rules import analysis
from ..rules.analysis import GameAnalysis
from ..errors import InvalidValue, UnknownName
from ..game import BLACK, WHITE

# ----------------------------------------------------------------------------------------------------------
# compiled helpers


@njit(cache=True)
def _onehot(values, first, k, saturate, mask, out, off):
    """out[t, p, off + (v - first)] = 1 for ``first <= v``; values past the last plane saturate or drop."""
    T, P = values.shape
    use_mask = mask.shape[0] > 0
    for t in range(T):
        for p in range(P):
            if use_mask and mask[t, p] == 0:
                continue
            v = values[t, p]
            if v < first:
                continue
            j = v - first
            if j >= k:
                if not saturate:
                    continue
                j = k - 1
            out[t, p, off + j] = 1


@njit(cache=True)
def _colour_planes(stones, to_move, which, out, off):
    """which: 0 = pla, opp, empty (3 planes); 1 = pla, opp (2 planes)."""
    T, P = stones.shape
    for t in range(T):
        pla = to_move[t]
        for p in range(P):
            v = stones[t, p]
            if v == 0:
                if which == 0:
                    out[t, p, off + 2] = 1
            elif v == pla:
                out[t, p, off] = 1
            else:
                out[t, p, off + 1] = 1


@njit(cache=True)
def _split_by_owner(values, stones, to_move, want_pla):
    """values where the stone is pla's (``want_pla``) or opp's, else 0."""
    T, P = values.shape
    res = np.zeros((T, P), dtype=values.dtype)
    for t in range(T):
        for p in range(P):
            v = stones[t, p]
            if v != 0 and (v == to_move[t]) == want_pla:
                res[t, p] = values[t, p]
    return res


@njit(cache=True)
def _history(stones, to_move, depth, out, off):
    """pla stones at t..t-depth+1 (depth planes), then opp stones likewise."""
    T, P = stones.shape
    for t in range(T):
        pla = to_move[t]
        for d in range(depth):
            s = t - d
            if s < 0:
                break
            for p in range(P):
                v = stones[s, p]
                if v == pla:
                    out[t, p, off + d] = 1
                elif v != 0:
                    out[t, p, off + depth + d] = 1


@njit(cache=True)
def _previous_moves(target, to_move, nn, depth, out, off):
    T = target.shape[0]
    for t in range(T):
        pla = to_move[t]
        for d in range(1, depth + 1):
            s = t - d
            if s < 0:
                break
            expect = pla if d % 2 == 0 else 3 - pla
            if to_move[s] != expect:
                break
            if target[s] != nn:
                out[t, target[s], off + d - 1] = 1


@njit(cache=True)
def _colour_history(stones, to_move, depth, out, off):
    """Qiqiao: per colour c (black planes ``off..``, then white), c's stones on the board after each of c's last
    ``depth`` moves, oldest first; before c's first move the initial board (setup included) is c's state."""
    T, P = stones.shape
    last = np.full((2, depth), -1, dtype=np.int64)  # per colour: its last moves, most recent first
    count = np.zeros(2, dtype=np.int64)
    for t in range(T):
        for ci in range(2):
            c = ci + 1
            n = min(count[ci], depth)
            for k in range(min(n + 1, depth)):
                src = last[ci, k] + 1 if k < n else 0  # the board after the move (before the next one)
                plane = off + ci * depth + depth - 1 - k
                for p in range(P):
                    if stones[src, p] == c:
                        out[t, p, plane] = 1
        ci = to_move[t] - 1
        for k in range(depth - 1, 0, -1):
            last[ci, k] = last[ci, k - 1]
        last[ci, 0] = t
        count[ci] += 1


@njit(cache=True)
def _liberty_points(stones, libs, to_move, nb, out, off):
    """NoGoZero+: empty points that are liberties of pla 1-lib, pla 2-lib, opp 1-lib, opp 2-lib chains."""
    T, P = stones.shape
    for t in range(T):
        pla = to_move[t]
        for p in range(P):
            if stones[t, p] != 0:
                continue
            for k in range(4):
                r = nb[p, k]
                if r < 0:
                    continue
                v = stones[t, r]
                if v == 0:
                    continue
                lb = libs[t, r]
                if lb == 1 or lb == 2:
                    j = (0 if v == pla else 2) + (lb - 1)
                    out[t, p, off + j] = 1


_NO_MASK = np.zeros((0, 0), dtype=np.uint8)
#: values of ``Feature.legality`` ("" = the feature says nothing about legality)
LEGALITY = ("", "plane", "buckets")

# ----------------------------------------------------------------------------------------------------------
# the registry


@dataclasses.dataclass(frozen=True)
class Feature:
    name: str
    planes: int
    meaning: str
    fn: Callable
    flags: int = 0  # analysis arrays it needs (analysis.F_*)
    column: str | None = None  # constant features: the per-row column they are made from
    libs_cap: int = 0  # liberties-after-move values it distinguishes (it reads min(libs, cap))
    history: tuple[tuple[int, ...], ...] = ()  # its planes of history depth 1, 2, ... (module docstring)
    legality: str = ""  # "plane" | "buckets": how its planes give legality (module docstring); "" none

    def __post_init__(self):
        if self.legality not in LEGALITY:
            raise ValueError(f"{self.name}: legality must be one of {LEGALITY}, got {self.legality!r}")
        if any(not 0 <= p < self.planes for g in self.history for p in g):
            raise ValueError(f"{self.name}: history planes must be in 0..{self.planes - 1}")

    @property
    def constant(self) -> bool:
        return self.column is not None


FEATURES: dict[str, Feature] = {}


def feature(name: str, planes: int, meaning: str, *, flags: int = 0, libs_cap: int = 0,
            history: tuple[tuple[int, ...], ...] = (), legality: str = ""):
    """Register a stored feature: ``fn(a: GameAnalysis, out: uint8[T, N*N, C], off)`` sets its planes."""

    def register(fn):
        FEATURES[name] = Feature(name, planes, meaning, fn, flags, libs_cap=libs_cap, history=history,
                                 legality=legality)
        return fn

    return register


def constant(name: str, planes: int, meaning: str, *, column: str):
    """Register a constant feature: ``fn(values: int[B]) -> uint8[B, planes]``, broadcast over the board."""

    def register(fn):
        FEATURES[name] = Feature(name, planes, meaning, fn, column=column)
        return fn

    return register


def _onehot_into(out, off, values, first, k, *, saturate=True, mask=None):
    _onehot(values, first, k, saturate, _NO_MASK if mask is None else mask, out, off)


def _turns_since(a: GameAnalysis) -> np.ndarray:
    t = np.arange(len(a), dtype=np.int32)[:, None]
    turns = t - a.placed.astype(np.int32) + 1
    return np.where(a.stones != 0, np.minimum(turns, 1000), 0).astype(np.int16)


# --- stored features ---------------------------------------------------------------------------------------
@feature("stone_colour", 3, "pla stone, opp stone, empty point")
def _f_stone_colour(a, out, off):
    _colour_planes(a.stones, a.to_move, 0, out, off)


@feature("pla_opp_stones", 2, "pla stone, opp stone")
def _f_pla_opp(a, out, off):
    _colour_planes(a.stones, a.to_move, 1, out, off)


@feature("liberties_4", 4, "liberties of the chain: 1, 2, 3, >=4")
def _f_libs4(a, out, off):
    _onehot_into(out, off, a.libs, 1, 4)


@feature("liberties_8", 8, "liberties of the chain: 1..7, >=8")
def _f_libs8(a, out, off):
    _onehot_into(out, off, a.libs, 1, 8)


@feature("liberties_after_6", 6, "liberties after a legal pla move here: 1..5, >=6", flags=analysis.F_LIBS_AFTER_PLA,
         libs_cap=6, legality="buckets")
def _f_la6(a, out, off):
    _onehot_into(out, off, a.libs_after_pla, 1, 6, mask=a.legal)


@feature("liberties_after_8", 8, "liberties after a legal pla move here: 1..7, >=8", flags=analysis.F_LIBS_AFTER_PLA,
         libs_cap=8, legality="buckets")
def _f_la8(a, out, off):
    _onehot_into(out, off, a.libs_after_pla, 1, 8, mask=a.legal)


@feature("legal", 1, "the move is legal for pla", flags=analysis.F_LIBS_AFTER_PLA, legality="plane")
def _f_legal(a, out, off):
    out[:, :, off] = a.legal


@feature("turns_since_5", 5, "moves since the stone was played: 1..4, >=5")
def _f_ts5(a, out, off):
    _onehot_into(out, off, _turns_since(a), 1, 5)


@feature("turns_since_8", 8, "moves since the stone was played: 1..7, >=8")
def _f_ts8(a, out, off):
    _onehot_into(out, off, _turns_since(a), 1, 8)


@feature("capture_size_7", 7, "opp stones a pla move here captures: 1..6, >=7", flags=analysis.F_LIBS_AFTER_PLA)
def _f_cap7(a, out, off):
    _onehot_into(out, off, a.capture_pla, 1, 7)


@feature("capture_size_8", 8, "opp stones a legal pla move here captures: 0..6, >=7", flags=analysis.F_LIBS_AFTER_PLA)
def _f_cap8(a, out, off):
    _onehot_into(out, off, a.capture_pla, 0, 8)


@feature("self_atari_8", 8, "pla stones left in atari by a pla move here: 1..7, >=8", flags=analysis.F_LIBS_AFTER_PLA,
         libs_cap=2)
def _f_sa8(a, out, off):
    _onehot_into(out, off, a.self_atari_pla, 1, 8)


@feature("ladder_capture", 1, "a legal pla move here is a working ladder capture",
         flags=analysis.F_LIBS_AFTER_PLA | analysis.F_LADDER_PLA)
def _f_ladder_capture(a, out, off):
    out[:, :, off] = a.ladder_capture


@feature("ladder_escape", 1, "a legal pla move here escapes a ladder", flags=analysis.F_LIBS_AFTER_PLA | analysis.F_LADDER_PLA)
def _f_ladder_escape(a, out, off):
    out[:, :, off] = a.ladder_escape


@feature("sensibleness", 1, "legal for pla and not filling pla's own eye", flags=analysis.F_LIBS_AFTER_PLA | analysis.F_EYE)
def _f_sensible(a, out, off):
    out[:, :, off] = a.legal & (1 - a.eye_pla)


@feature("history_8", 16, "pla stones at t..t-7, then opp stones at t..t-7",
         history=tuple((d, 8 + d) for d in range(1, 8)))
def _f_history8(a, out, off):
    _history(a.stones, a.to_move, 8, out, off)


@feature("gonn_liberties", 8, "pla stones in chains of exactly 1..4 liberties, then opp stones likewise")
def _f_gonn_libs(a, out, off):
    _onehot_into(out, off, _split_by_owner(a.libs, a.stones, a.to_move, True), 1, 4, saturate=False)
    _onehot_into(out, off + 4, _split_by_owner(a.libs, a.stones, a.to_move, False), 1, 4, saturate=False)


@feature("gonn_liberties_after", 6, "liberties after a pla move exactly 1..3, then after an opp move",
         flags=analysis.F_LIBS_AFTER_PLA | analysis.F_LIBS_AFTER_OPP, libs_cap=4)
def _f_gonn_la(a, out, off):
    _onehot_into(out, off, a.libs_after_pla, 1, 3, saturate=False)
    _onehot_into(out, off + 3, a.libs_after_opp, 1, 3, saturate=False)


@feature("ko_ban", 1, "simple-ko point where pla may not play")
def _f_ko(a, out, off):
    t = np.nonzero(a.ko >= 0)[0]
    out[t, a.ko[t], off] = 1


@feature("previous_moves_5", 5, "location of the move 1..5 back, while colours alternate (pass: none)",
         history=tuple((d,) for d in range(5)))
def _f_prev5(a, out, off):
    _previous_moves(a.target, a.to_move, a.size * a.size, 5, out, off)


@feature("gonn_ladders", 3, "stones of 1-lib chains dead in a ladder; stones of 2-lib chains an attacker "
         "captures in a ladder; the attacker's working first moves", flags=analysis.F_LADDER_CHAINS)
def _f_gonn_ladders(a, out, off):
    out[:, :, off] = a.ladder_atari_dead
    out[:, :, off + 1] = a.ladder_2lib_dead
    out[:, :, off + 2] = a.ladder_2lib_move


@feature("nogo_liberties", 4, "liberties of pla 1-lib, pla 2-lib, opp 1-lib, opp 2-lib chains")
def _f_nogo(a, out, off):
    from ..rules.board import neighbours_cached

    _liberty_points(a.stones, a.libs, a.to_move, neighbours_cached(a.size), out, off)


@feature("colour_history_4", 8, "black stones after each of black's last 4 moves (oldest first), then white "
         "stones after each of white's last 4 moves", history=((2, 6), (1, 5), (0, 4)))
def _f_colour_history4(a, out, off):
    _colour_history(a.stones, a.to_move, 4, out, off)


@feature("previous_move", 1, "location of the previous move, whichever colour played it (after a pass or at the "
         "start: none)")
def _f_previous_move(a, out, off):
    prev = a.target[:-1].astype(np.intp)
    t = np.nonzero(prev != a.size * a.size)[0]
    out[t + 1, prev[t], off] = 1


# --- constant features ---------------------------------------------------------------------------------------
@constant("ones", 1, "constant 1 (also GoNN's on-board plane)", column="to_move")
def _c_ones(v):
    return np.ones((len(v), 1), dtype=np.uint8)


@constant("zeros", 1, "constant 0", column="to_move")
def _c_zeros(v):
    return np.zeros((len(v), 1), dtype=np.uint8)


@constant("black_to_move", 1, "1 if black is to move", column="to_move")
def _c_black(v):
    return (np.asarray(v) == BLACK).astype(np.uint8)[:, None]


@constant("white_to_move", 1, "1 if white is to move (Qiqiao's side-to-move plane)", column="to_move")
def _c_white(v):
    return (np.asarray(v) == WHITE).astype(np.uint8)[:, None]


@constant("rank_dan_9", 9, "one-hot rank of the player 1d..9d (pros as 9d; kyu/unknown all 0)",
          column="player_rank")
def _c_rank(v):
    v = np.asarray(v, dtype=np.int32)
    out = np.zeros((len(v), 9), dtype=np.uint8)
    ok = v >= 0  # ranks: 1d = 0 .. 9d = 8, pros 9..17 (-> 9d); kyu < 0; unknown -128
    out[np.nonzero(ok)[0], np.minimum(v[ok], 8)] = 1
    return out


# ----------------------------------------------------------------------------------------------------------
# feature sets


@dataclasses.dataclass(frozen=True)
class FeatureSet:
    name: str
    version: int
    features: tuple[Feature, ...]

    @property
    def num_planes(self) -> int:
        return sum(f.planes for f in self.features)

    @property
    def num_stored(self) -> int:
        return sum(f.planes for f in self.features if not f.constant)

    @property
    def flags(self) -> int:
        fl = 0
        for f in self.features:
            fl |= f.flags
        return fl

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(sorted({f.column for f in self.features if f.constant}))

    @property
    def libs_cap(self) -> int:
        """Liberties after move are counted up to this: the most any feature of the set tells apart."""
        return max([f.libs_cap for f in self.features] + [1])

    def offsets(self) -> list[int]:
        """First channel of each feature in the set's planes (constant planes included)."""
        return [int(o) for o in np.cumsum([0] + [f.planes for f in self.features])[:-1]]

    def history_channels(self) -> tuple[tuple[int, ...], ...]:
        """Channels of history depth 1, 2, ...: each feature's declared ``history`` groups, in feature order."""
        return tuple(tuple(off + p for p in group) for f, off in zip(self.features, self.offsets())
                     for group in f.history)

    def legal_channels(self) -> tuple[int, ...] | None:
        """Channels whose union is legality for pla (the module docstring's ``legality`` rule), or None."""
        for kind in ("plane", "buckets"):
            for f, off in zip(self.features, self.offsets()):
                if f.legality == kind:
                    return tuple(range(off, off + f.planes))
        return None

    def plane_names(self) -> list[str]:
        return [f"{f.name}[{i}]" for f in self.features for i in range(f.planes)]

    def describe(self) -> list[tuple[str, int, str, bool]]:
        return [(f.name, f.planes, f.meaning, f.constant) for f in self.features]

    def compute(self, a: GameAnalysis) -> np.ndarray:
        """Stored planes of every position of an analysed game: uint8 [T, N, N, num_stored]."""
        n = a.size
        out = np.zeros((len(a), n * n, self.num_stored), dtype=np.uint8)
        off = 0
        for f in self.features:
            if not f.constant:
                f.fn(a, out, off)
                off += f.planes
        return out.reshape(len(a), n, n, self.num_stored)

    def assemble(self, stored: np.ndarray, columns: dict[str, np.ndarray]) -> np.ndarray:
        """All planes, in the set's order: stored uint8 [B, N, N, num_stored] + columns -> uint8 [B, N, N, C]."""
        b, n = stored.shape[0], stored.shape[1]
        if stored.shape[-1] != self.num_stored:
            raise ValueError(f"{self.name}: expected {self.num_stored} stored planes, got {stored.shape[-1]}")
        out = np.empty((b, n, n, self.num_planes), dtype=np.uint8)
        src = dst = 0
        for f in self.features:
            if f.constant:
                vals = f.fn(columns[f.column])  # [B, planes]
                out[..., dst:dst + f.planes] = vals[:, None, None, :]
            else:
                out[..., dst:dst + f.planes] = stored[..., src:src + f.planes]
                src += f.planes
            dst += f.planes
        return out

    def __add__(self, other: "FeatureSet") -> "FeatureSet":
        return FeatureSet(f"{self.name}+{other.name}", max(self.version, other.version),
                          self.features + other.features)


def _set(name: str, version: int, names: list[str]) -> FeatureSet:
    return FeatureSet(name, version, tuple(FEATURES[n] for n in names))


SETS: dict[str, FeatureSet] = {
    s.name: s
    for s in [
        _set("maddison", 1, ["stone_colour", "liberties_4", "liberties_after_6", "legal", "turns_since_5",
                             "capture_size_7", "ladder_capture", "rank_dan_9"]),
        _set("alphago", 1, ["stone_colour", "ones", "turns_since_8", "liberties_8", "capture_size_8",
                            "self_atari_8", "liberties_after_8", "ladder_capture", "ladder_escape",
                            "sensibleness", "zeros"]),
        _set("agz", 1, ["history_8", "black_to_move"]),
        _set("gonn", 1, ["ones", "pla_opp_stones", "gonn_liberties", "gonn_liberties_after", "ko_ban",
                         "previous_moves_5", "gonn_ladders"]),
        _set("nogo_liberties", 1, ["nogo_liberties"]),
        _set("rank_planes", 1, ["rank_dan_9"]),
        _set("qiqiao", 1, ["colour_history_4", "white_to_move", "previous_move"]),
    ]
}
PLANE_COUNTS = {"maddison": 36, "alphago": 48, "agz": 17, "gonn": 26, "nogo_liberties": 4, "qiqiao": 10,
                "rank_planes": 9}


def names() -> list[str]:
    return sorted(SETS)


def get(name: str) -> FeatureSet:
    """A feature set by name; ``a+b`` concatenates sets (e.g. ``agz+nogo_liberties``). An unknown name is an
    :class:`~kifunet.data_prep.errors.UnknownName` (a ``KeyError``) listing the known ones."""
    parts = name.split("+")
    try:
        fs = SETS[parts[0]]
        for p in parts[1:]:
            fs = fs + SETS[p]
    except KeyError as e:
        raise UnknownName(f"unknown feature set {e.args[0]!r}; known: {', '.join(names())}") from None
    return fs


def with_constant_planes(name: str, extra: str) -> str:
    """The name of set ``name`` followed by the sets ``extra`` (``a+b``; "" adds nothing), checking that ``extra``
    adds constant planes only, so a dataset built with ``name`` stores every plane the result needs."""
    if not extra:
        return name
    added = get(extra)
    stored = [f.name for f in added.features if not f.constant]
    if stored:
        raise InvalidValue(f"{extra!r} adds stored planes ({', '.join(stored)}); only constant planes can be added "
                         f"to a built dataset (known constant-only sets: "
                         f"{', '.join(n for n in names() if all(f.constant for f in SETS[n].features))})")
    return f"{name}+{extra}"


def constant_extension(base: str, name: str) -> str | None:
    """``extra`` when ``name`` is ``with_constant_planes(base, extra)`` ("" when ``name == base``), else None: how
    a net trained on set ``name`` reads a dataset built with ``base``."""
    if name == base:
        return ""
    if not name.startswith(base + "+"):
        return None
    extra = name[len(base) + 1:]
    try:
        with_constant_planes(base, extra)
    except (KeyError, ValueError):
        return None
    return extra
