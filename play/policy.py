"""A policy for play: a model, its feature set, a rank and a game profile, turned into move probabilities.

Positions are built as the dataset builds them, the last :data:`HISTORY_WINDOW` moves replayed and the board
before them as setup stones (the planes equal the full replay's). The rank is written as both players'; a net
with a profile input gets :meth:`Policy.effective_profile`. The policy interface that
:class:`Policy`, :class:`~kifunet.play.onnx_policy.OnnxPolicy` and :class:`~kifunet.play.lazy_policy.LazyPolicy`
share: docs/playing.md (The policy interface)."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from kifunet.data_prep.errors import InvalidValue, UnknownName
from kifunet.data_prep.planes import features as features_mod
from kifunet.data_prep import profiles, ranks
from kifunet.data_prep.planes import replay
from kifunet.data_prep import symmetries as sym
from kifunet.data_prep.rules.board import Board
from kifunet.data_prep.game import BLACK, MOVE, SETUP, GameInfo, GameRecord
from kifunet.models.forward import Outputs

#: moves replayed as moves before the position (the rest of the game becomes setup stones); >= 8 is exact
HISTORY_WINDOW = 16
#: the board sizes a policy may be asked to play (the feature planes and GTP vertices go up to 25)
MIN_SIZE, MAX_SIZE = 2, 25


def check_symmetries(k) -> int:
    """``k`` as the number of symmetries to average (1..8); ``ValueError`` otherwise."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= sym.NUM_SYMMETRIES:
        raise InvalidValue(f"symmetries must be an integer from 1 to {sym.NUM_SYMMETRIES}, not {k!r}")
    return int(k)


def symmetric_batch(x: np.ndarray, k: int) -> np.ndarray:
    """``x [N, N, C]`` -> ``[k, N, N, C]``: the position under symmetries ``0..k-1`` (the first is ``x``)."""
    return sym.apply_planes_batch(np.repeat(x[None], k, axis=0), np.arange(k))


def softmax(logits: np.ndarray) -> np.ndarray:
    """float64 softmax over the last axis."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def symmetry_mean(logits: np.ndarray, values: np.ndarray | None, n: int) -> tuple[np.ndarray, float | None]:
    """``(probabilities, value)`` of k passes over symmetries ``0..k-1`` (``logits [k, N*N+1]``): each row's
    softmax mapped back (``INVERSE[s]``), then the mean; the value is the mean of ``values``."""
    k = logits.shape[0]
    probs = sym.apply_policy_batch(softmax(logits), sym.INVERSE[:k].astype(np.int64), n).mean(axis=0)
    value = None if values is None else float(np.mean(np.asarray(values, dtype=np.float64)))
    return probs, value


def size_range_problem(n) -> str | None:
    """Why ``n`` is no board size a policy plays (2..25), or None."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not MIN_SIZE <= int(n) <= MAX_SIZE:
        return f"board sizes are {MIN_SIZE} to {MAX_SIZE}, not {n!r}"
    return None


def feature_set_for(in_planes: int) -> str:
    """The one named feature set with ``in_planes`` planes (36 -> maddison, 48 -> alphago, 17 -> agz, 26 -> gonn,
    21 -> agz+nogo_liberties); ``KeyError`` when none or several match."""
    candidates = {name: fs.num_planes for name, fs in features_mod.SETS.items() if name != "nogo_liberties"}
    candidates.update({f"{name}+nogo_liberties": n + features_mod.SETS["nogo_liberties"].num_planes
                       for name, n in list(candidates.items())})
    found = [name for name, n in candidates.items() if n == in_planes]
    if len(found) != 1:
        raise UnknownName(f"no single feature set has {in_planes} planes ({', '.join(found) or 'none'}); "
                       f"name it with --features")
    return found[0]


def rank_value(rank) -> int:
    """``'9d'`` / ``8`` / ``None`` -> the rank scale of :mod:`kifunet.data_prep.ranks` (None -> UNKNOWN)."""
    if rank is None:
        return ranks.UNKNOWN
    if isinstance(rank, (int, np.integer)):
        return int(rank)
    v = ranks.parse_rank(str(rank))
    if v == ranks.UNKNOWN and str(rank).strip() not in ("", "?", "-", "unknown"):
        raise InvalidValue(f"not a rank: {rank!r} (e.g. 1d, 5d, 9d, 3k, 9p)")
    return v


def profile_value(profile) -> profiles.Profile:
    """``None`` / a :class:`~kifunet.data_prep.profiles.Profile` / :func:`~kifunet.data_prep.profiles.parse`'s
    text / a :func:`~kifunet.data_prep.profiles.parse_fields` dict -> a ``Profile`` (None: all unknown); bad
    text is the ``ValueError`` naming the key or value."""
    if profile is None:
        return profiles.UNKNOWN_PROFILE
    if isinstance(profile, profiles.Profile):
        return profile
    if isinstance(profile, dict):
        return profiles.Profile(**profile)
    return profiles.parse(str(profile))


def profile_text(fields: dict) -> str:
    """``fields`` (a :func:`~kifunet.data_prep.profiles.parse_fields` dict) in
    :func:`~kifunet.data_prep.profiles.parse`'s syntax, in the order of :class:`~kifunet.data_prep.profiles.Profile`'s
    fields whatever order they were given in (``rank=7d,date=2010-07-01,source=kgs``; ``""``: none)."""
    return profiles.fields_text(fields)


def fill_profile(profile: profiles.Profile, rank: int) -> profiles.Profile:
    """``profile`` with its unknown ``rank`` and ``opponent_rank`` set to ``rank`` when that is a known rank."""
    if not ranks.is_known(int(rank)):
        return profile
    import dataclasses

    return dataclasses.replace(profile, rank=int(rank) if profile.rank is None else profile.rank,
                               opponent_rank=int(rank) if profile.opponent_rank is None else profile.opponent_rank)


def _split_record(record: GameRecord):
    """(setup, moves) of a record whose setup events all come first; None if setup follows a move."""
    kinds = record.kinds.tolist()
    first_move = kinds.index(MOVE) if MOVE in kinds else len(kinds)
    if SETUP in kinds[first_move:]:
        return None
    ev = list(zip(kinds, record.colours.tolist(), record.points.tolist()))
    setup = [(c, p) for k, c, p in ev[:first_move]]
    moves = [(c, p) for k, c, p in ev[first_move:]]
    return setup, moves


def position_record(size: int, moves: Sequence[tuple[int, int]], colour: int, setup: Sequence[tuple[int, int]] = (),
                    *, rank: int = ranks.UNKNOWN, window: int = HISTORY_WINDOW) -> GameRecord:
    """A record whose last position is the one after ``setup`` + ``moves`` with ``colour`` to play: moves older
    than the last ``window`` folded into setup stones, the last event a placeholder pass by ``colour``; the moves
    must be legal."""
    moves = [(int(c), int(p)) for c, p in moves]
    setup = [(int(c), int(p)) for c, p in setup]
    if len(moves) > window:
        b = Board(size)
        for c in (1, 2):
            pts = [p for cc, p in setup if cc == c]
            if pts:
                b.setup(pts, c)
        for c, p in moves[:-window]:
            b.play(p, c)
        st = b.stones.reshape(-1)
        setup = [(int(st[p]), p) for p in range(size * size) if st[p] != 0]
        moves = moves[-window:]
    info = GameInfo(size=size, black_rank=rank, white_rank=rank)
    return GameRecord.from_moves(size, moves + [(int(colour), size * size)], setup=setup, info=info)


def record_planes(record: GameRecord, fs) -> np.ndarray:
    """uint8 [N, N, C]: every plane of ``fs`` for the last position of a :func:`position_record` (no net: the
    feature code alone, which a lazy policy warms up while JAX loads)."""
    enc = replay.encode_game(record, fs)
    cols = {k: v[-1:] for k, v in enc.columns().items()}
    return fs.assemble(enc.planes[-1:], cols)[0]


class Policy:
    """Move probabilities of a ``model`` (a :class:`kifunet.models.PolicyNet`, put in eval mode) with
    ``feature_set`` (a name or a :class:`FeatureSet`), ``rank``, ``trained_size`` (default: the model's board) and
    ``profile`` (read only by a net with a profile input)."""

    def __init__(self, model, feature_set, board_size: int | None = None, rank=None, *,
                 window: int = HISTORY_WINDOW, description: str = "", trained_size: int | None = None,
                 profile=None):
        from kifunet.models.forward import Forward

        self.fs = features_mod.get(feature_set) if isinstance(feature_set, str) else feature_set
        self.board_size = int(board_size if board_size is not None else model.board_size)
        if model.board_size != self.board_size:
            raise InvalidValue(f"model plays {model.board_size}x{model.board_size}, not {self.board_size}")
        if model.in_planes != self.fs.num_planes:
            raise InvalidValue(f"model wants {model.in_planes} planes; feature set {self.fs.name} has "
                             f"{self.fs.num_planes}")
        if window < 8:
            raise ValueError("window must be at least 8 moves (the deepest feature history)")
        self.model = model
        self.rank = rank_value(rank)
        self.profile = profile_value(profile)
        self.window = window
        self.description = description or type(model).__name__
        self.trained_size = int(trained_size if trained_size is not None else self.board_size)
        self._size_problems: dict[int, str | None] = {}
        self.net = Forward(model)  # eval mode, the weights on the device once, one jitted forward pass
        self.facts = self.net.facts

    @property
    def has_pass(self) -> bool:
        """Whether the net has a pass output (``facts.has_pass``; else pass is -1e9)."""
        return self.facts.has_pass

    @property
    def has_value(self) -> bool:
        """Whether the net has a value head (``facts.has_value``): :meth:`evaluate` then gives a value."""
        return self.facts.has_value

    @property
    def reads_profile(self) -> bool:
        """Whether the net has a profile input (``facts.reads_profile``)."""
        return self.facts.reads_profile

    @property
    def has_ownership(self) -> bool:
        """Whether the net has an ownership head (``facts.has_ownership``): :meth:`outputs` then gives it."""
        return self.facts.has_ownership

    @property
    def has_score(self) -> bool:
        """Whether the net has a score head (``facts.has_score``): :meth:`outputs` then gives it."""
        return self.facts.has_score

    def with_rank(self, rank) -> "Policy":
        """The same net and features with another rank (shares the compiled forward pass)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.rank = rank_value(rank)
        return other

    def with_profile(self, profile) -> "Policy":
        """The same net and features with another profile (:func:`profile_value`; shares the forward pass)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.profile = profile_value(profile)
        return other

    def effective_profile(self) -> profiles.Profile:
        """The profile the net is given: :attr:`profile` with unknown ranks filled by the policy's rank."""
        return fill_profile(self.profile, self.rank)

    def profile_batch(self, b: int) -> np.ndarray:
        """float32 ``[b, 46]``: :meth:`effective_profile` encoded, on every row."""
        return np.broadcast_to(profiles.encode(self.effective_profile()), (b, profiles.SIZE)).copy()

    # --- positions ---------------------------------------------------------------------------------------
    def record(self, record_or_moves, colour: int, setup=()) -> GameRecord:
        if isinstance(record_or_moves, GameRecord):
            if record_or_moves.size != self.board_size:
                raise InvalidValue(f"record is {record_or_moves.size}x{record_or_moves.size}, policy plays "
                                 f"{self.board_size}x{self.board_size}")
            split = _split_record(record_or_moves)
            if split is None:  # setup in mid-game: replay the whole record
                r = record_or_moves
                n = r.size
                info = GameInfo(size=n, black_rank=self.rank, white_rank=self.rank)
                return GameRecord(size=n, kinds=np.append(r.kinds, MOVE).astype(np.int8),
                                  colours=np.append(r.colours, colour).astype(np.int8),
                                  points=np.append(r.points, n * n).astype(np.int16), info=info)
            setup, moves = split
        else:
            moves = record_or_moves
        return position_record(self.board_size, moves, colour, setup, rank=self.rank, window=self.window)

    def planes(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """uint8 [N, N, C]: every plane of the position with ``colour`` to play."""
        return record_planes(self.record(record_or_moves, colour, setup), self.fs)

    # --- the net -----------------------------------------------------------------------------------------
    def run_batch(self, planes: np.ndarray, colour: int) -> Outputs:
        """The net's :class:`~kifunet.models.forward.Outputs` for a batch of planes ``[B, N, N, C]``, every row with
        this policy's rank and ``colour`` to play, as float32 NumPy arrays: ``logits [B, N*N + 1]``, ``value [B]``,
        ``ownership [B, N, N]`` and ``score [B]``, each None where the net lacks that head."""
        b = planes.shape[0]
        out = self.net(np.asarray(planes, dtype=np.float32), np.full(b, self.rank, np.int32),
                       np.full(b, int(colour), np.int32), self.profile_batch(b) if self.reads_profile else None)
        n = self.board_size
        shapes = {"logits": (b, n * n + 1), "value": (b,), "ownership": (b, n, n), "score": (b,)}
        return Outputs(**{k: None if v is None else np.asarray(v, dtype=np.float32).reshape(shapes[k])
                          for k, v in out._asdict().items()})

    def _run(self, record_or_moves, colour: int, setup=(), symmetries: int = 1) -> Outputs:
        """:meth:`run_batch` of the position with ``colour`` to play under the first ``symmetries`` board
        symmetries (row 0: the position itself; row s on symmetry s's board, not mapped back)."""
        k = check_symmetries(symmetries)
        x = self.planes(record_or_moves, colour, setup)
        return self.run_batch(symmetric_batch(x, k) if k > 1 else x[None], colour)

    def outputs(self, record_or_moves, colour: int, setup=(), *, symmetries: int = 1) -> Outputs:
        """Every head's output for the position with ``colour`` to play, one row per symmetry ``s = 0..k-1``
        (``k = symmetries``), each row's logits and ownership mapped back onto the position (``INVERSE[s]``):
        :meth:`run_batch`'s arrays; ``ownership`` +1 where ``colour`` owns the point at the end, ``score`` the final
        margin in points for ``colour`` (the heads' contract: :mod:`kifunet.models.aux_heads`)."""
        out = self._run(record_or_moves, colour, setup, symmetries)
        k = out.logits.shape[0]
        if k == 1:
            return out
        back = sym.INVERSE[:k].astype(np.int64)
        own = out.ownership
        return out._replace(logits=sym.apply_policy_batch(out.logits, back, self.board_size),
                            ownership=None if own is None else sym.apply_planes_batch(own[..., None], back)[..., 0])

    def logits(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """float32 [N*N + 1] logits of the position with ``colour`` to play."""
        return self._run(record_or_moves, colour, setup).logits[0]

    def evaluate(self, record_or_moves, colour: int, setup=(), *,
                 symmetries: int = 1) -> tuple[np.ndarray, float | None]:
        """``(probabilities, value)``: :meth:`probabilities`, and the value head's expected result in [-1, 1] for
        ``colour`` (None without a value head); with ``symmetries=k`` both are means over the first k symmetries."""
        out = self._run(record_or_moves, colour, setup, symmetries)
        return symmetry_mean(out.logits, out.value, self.board_size)

    def probabilities(self, record_or_moves, colour: int, setup=(), *, symmetries: int = 1) -> np.ndarray:
        """float64 [N*N + 1] move probabilities (softmax over every point and pass, legal or not); with
        ``symmetries=k`` the mean over the first k board symmetries."""
        return self.evaluate(record_or_moves, colour, setup, symmetries=symmetries)[0]

    def warm_up(self) -> "Policy":
        """Run the net once on the empty board (compiling its forward pass and the feature code); returns self."""
        self._run([], BLACK)
        return self

    # --- board sizes -------------------------------------------------------------------------------------
    def size_problem(self, n: int) -> str | None:
        """None when the net can play an n x n board with its weights (``facts.accepts(n)``), else the reason."""
        problem = size_range_problem(n)
        if problem or self.facts.accepts(n):
            return problem
        n = int(n)
        if n not in self._size_problems:
            self._size_problems[n] = self._size_reason(n)
        return self._size_problems[n]

    def _model_at(self, n: int):
        """A copy of the model set to play n x n, sharing the weights (the same state, another board size)."""
        from flax import nnx

        model = nnx.merge(self.net.graphdef, self.net.state)
        model.board_size = n
        return model

    def _size_reason(self, n: int) -> str:
        """Why the net cannot play n x n, a board its facts refuse: the first weight shaped for the trained board,
        else what tracing the forward pass at n x n (shapes only, nothing runs) says."""
        import jax

        model = self._model_at(n)
        spec = jax.ShapeDtypeStruct((1, n, n, self.fs.num_planes), np.float32)
        one = jax.ShapeDtypeStruct((1,), np.int32)
        try:
            out = jax.eval_shape(lambda x, r, t: model(x, rank=r, to_move=t).logits, spec, one, one)
            why = (f"it gives {out.shape[-1]} move logits, not {n * n + 1}" if tuple(out.shape) != (1, n * n + 1)
                   else f"{type(model).__name__} is not resizable")
        except Exception as e:  # noqa: BLE001 -- a shape error inside the net: its weights are tied to one size
            why = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        tied = _size_tied_weight(self.net.state, self.trained_size)
        if tied:
            why = f"its weights are shaped for {self.trained_size}x{self.trained_size} ({tied})"
        return (f"{self.description} was trained on {self.trained_size}x{self.trained_size} and cannot play "
                f"{n}x{n}: {why}")

    def resized(self, n: int) -> "Policy":
        """This net playing n x n with the same weights (``ValueError`` with the reason when it cannot)."""
        problem = self.size_problem(n)
        if problem:
            raise ValueError(problem)
        n = int(n)
        if n == self.board_size:
            return self
        return Policy(self._model_at(n), self.fs, n, self.rank, window=self.window,
                      description=self.description, trained_size=self.trained_size, profile=self.profile)


def _size_tied_weight(state, n: int) -> str:
    """``path [shape]`` of the first weight with a dimension of n x n points (per-point biases, dense layers over
    the board), or ``''``."""
    import jax

    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        shape = tuple(getattr(leaf, "shape", ()))
        per_point = any(shape[i:i + 2] == (n, n) for i in range(len(shape) - 1))
        if per_point or any(d >= n * n and d % (n * n) in (0, 1) for d in shape):
            name = "/".join(str(getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))) for k in path)
            return f"{name.removesuffix('/value')} {list(shape)}"
    return ""


def fresh_policy(model_name: str, board_size: int, *, feature_set: str | None = None, seed: int = 0, rank=None,
                 profile=None, **model_kwargs) -> Policy:
    """A randomly initialised named model (``kifunet.models.create``) as a policy: for tests and smoke runs."""
    from flax import nnx

    from kifunet import models

    fs = feature_set or feature_set_for(models.default_in_planes(model_name))
    in_planes = features_mod.get(fs).num_planes
    net = models.create(model_name, board_size=board_size, in_planes=in_planes, rngs=nnx.Rngs(seed), **model_kwargs)
    return Policy(net, fs, board_size, rank, description=f"{model_name} (random weights, seed {seed})",
                  profile=profile)


def load_policy(checkpoint_dir: str | os.PathLike, rank=None, *, step: int | None = None,
                feature_set: str | None = None, board_size: int | None = None, profile=None) -> Policy:
    """The trained net of a training run as a policy, in float32. ``checkpoint_dir``: the run's workdir (newest
    checkpoint unless ``step``), its ``checkpoints`` directory, or one step's directory; feature set and board size:
    the arguments, else the dataset's manifest, else the checkpoint's metadata."""
    from kifunet.train.nets import load_net

    net = load_net(str(checkpoint_dir), step=step, feature_set=feature_set, board_size=board_size, dtype="float32")
    desc = f"{net.info['model']} from {os.path.basename(net.info['workdir'])}"
    if net.info.get("step") is not None:
        desc += f" step {net.info['step']}"
    return Policy(net.model, features_mod.get(net.feature_set), net.board_size, rank, description=desc,
                  trained_size=net.board_size, profile=profile)
