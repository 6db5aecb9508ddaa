"""A policy for play: a model, its feature set and a rank, turned into move probabilities for a position.

>>> from flax import nnx
>>> from kifunet import models
>>> from kifunet.play.policy import Policy
>>> net = models.create("maddison_tiny", board_size=9, rngs=nnx.Rngs(0))
>>> policy = Policy(net, "maddison", 9, rank="9d")
>>> p = policy.probabilities([(1, 40)], colour=2)   # white to play after black's tengen (flat 40)
>>> p.shape, round(float(p.sum()), 6)
((82,), 1.0)

Positions are built the way the dataset builds them (:func:`kifunet.data_prep.replay.encode_game`): the game
so far plus one placeholder move (a pass) for the side to play, whose planes are the position. Only the last
:data:`HISTORY_WINDOW` moves are replayed as moves; the board before them becomes setup stones. Every feature
of every set looks at most 8 moves back (``history_8``, ``turns_since_8``; setup stones read as "long ago"),
so the planes equal those of the full replay (``tests/test_policy.py`` checks this on long random games for
every set) and a move costs the same at move 300 as at move 3.

The rank: ``Policy(..., rank='9d')`` (or the scale value, ``ranks.parse_rank('9d') == 8``) is written as both
players' rank into the record, so rank planes (Maddison's set) and rank embeddings (``rank_embedding=True``
nets, given ``rank=int32[B]``) see it. ``None`` is "unknown" (-128). The colour to move goes to the model as
``to_move`` (Maddison's black/white output planes).

Value heads: a net whose forward pass returns a tuple ``(logits [B, N*N+1], value [B])``, the value in [-1, 1]
being the expected result for the side to move, is read generically: :meth:`Policy.evaluate` returns
``(probabilities, value)`` (``value`` None for a net that returns logits only), :attr:`Policy.has_value` says
which kind the net is, and :meth:`Policy.probabilities` and :meth:`Policy.logits` work for both.

:func:`load_policy` rebuilds a trained net from a training run directory (``train/checkpointing.py``).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from kifunet.data_prep import features as features_mod
from kifunet.data_prep import ranks, replay
from kifunet.data_prep.board import Board
from kifunet.data_prep.game import BLACK, MOVE, SETUP, GameInfo, GameRecord

#: moves replayed as moves before the position (the rest of the game becomes setup stones); >= 8 is exact
HISTORY_WINDOW = 16


def feature_set_for(in_planes: int) -> str:
    """The one named feature set with ``in_planes`` planes (36 -> maddison, 48 -> alphago, 17 -> agz, 26 -> gonn,
    21 -> agz+nogo_liberties); ``KeyError`` when none or several match."""
    candidates = {name: fs.num_planes for name, fs in features_mod.SETS.items() if name != "nogo_liberties"}
    candidates.update({f"{name}+nogo_liberties": n + features_mod.SETS["nogo_liberties"].num_planes
                       for name, n in list(candidates.items())})
    found = [name for name, n in candidates.items() if n == in_planes]
    if len(found) != 1:
        raise KeyError(f"no single feature set has {in_planes} planes ({', '.join(found) or 'none'}); "
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
        raise ValueError(f"not a rank: {rank!r} (e.g. 1d, 5d, 9d, 3k, 9p)")
    return v


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
    """A record whose last position is the one after ``setup`` + ``moves`` with ``colour`` to play.

    Moves older than the last ``window`` are folded into setup stones (see the module docstring). The moves
    must be legal (simple ko, no suicide); the last event is a placeholder pass by ``colour``.
    """
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


class Policy:
    """``probabilities(record_or_moves, colour) -> float[N*N+1]`` (softmax of the net's logits; pass = N*N).

    ``model``: a :class:`kifunet.models.PolicyNet` (put in eval mode here); ``feature_set``: a name or a
    :class:`FeatureSet` whose plane count matches the model; ``rank``: see the module docstring.
    """

    def __init__(self, model, feature_set, board_size: int | None = None, rank=None, *,
                 window: int = HISTORY_WINDOW, description: str = ""):
        import jax
        from flax import nnx

        self.fs = features_mod.get(feature_set) if isinstance(feature_set, str) else feature_set
        self.board_size = int(board_size if board_size is not None else model.board_size)
        if model.board_size != self.board_size:
            raise ValueError(f"model plays {model.board_size}x{model.board_size}, not {self.board_size}")
        if model.in_planes != self.fs.num_planes:
            raise ValueError(f"model wants {model.in_planes} planes; feature set {self.fs.name} has "
                             f"{self.fs.num_planes}")
        if window < 8:
            raise ValueError("window must be at least 8 moves (the deepest feature history)")
        self.model = model
        self.rank = rank_value(rank)
        self.window = window
        self.description = description or type(model).__name__
        self.has_pass = None  # learnt on the first call: nets without a pass output give NO_PASS_LOGIT
        self._has_value = None  # learnt on the first call: does the forward pass return (logits, value)?
        model.eval()
        graphdef, state = nnx.split(model)
        self._state = state

        @jax.jit
        def forward(state, planes, rank, to_move):
            return nnx.merge(graphdef, state)(planes, rank=rank, to_move=to_move)

        self._forward = forward

    def with_rank(self, rank) -> "Policy":
        """The same net and features with another rank (shares the compiled forward pass)."""
        other = object.__new__(Policy)
        other.__dict__.update(self.__dict__)
        other.rank = rank_value(rank)
        return other

    # --- positions ---------------------------------------------------------------------------------------
    def record(self, record_or_moves, colour: int, setup=()) -> GameRecord:
        if isinstance(record_or_moves, GameRecord):
            if record_or_moves.size != self.board_size:
                raise ValueError(f"record is {record_or_moves.size}x{record_or_moves.size}, policy plays "
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
        rec = self.record(record_or_moves, colour, setup)
        enc = replay.encode_game(rec, self.fs)
        cols = {k: v[-1:] for k, v in enc.columns().items()}
        return self.fs.assemble(enc.planes[-1:], cols)[0]

    # --- the net -----------------------------------------------------------------------------------------
    def _run(self, record_or_moves, colour: int, setup=()) -> tuple[np.ndarray, float | None]:
        """(float32 [N*N + 1] logits, value or None) of the position with ``colour`` to play."""
        x = self.planes(record_or_moves, colour, setup)[None].astype(np.float32)
        out = self._forward(self._state, x, np.array([self.rank], np.int32), np.array([int(colour)], np.int32))
        value = None
        if isinstance(out, (tuple, list)):  # a value head: (logits [B, N*N+1], value [B])
            out, value = out[0], float(np.asarray(out[1], dtype=np.float32).reshape(-1)[0])
        logits = np.asarray(out[0], dtype=np.float32)
        if self.has_pass is None:
            from kifunet.models import NO_PASS_LOGIT

            self.has_pass = bool(logits[-1] > NO_PASS_LOGIT / 2)
        if self._has_value is None:
            self._has_value = value is not None
        return logits, value

    def logits(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """float32 [N*N + 1] logits of the position with ``colour`` to play."""
        return self._run(record_or_moves, colour, setup)[0]

    def evaluate(self, record_or_moves, colour: int, setup=()) -> tuple[np.ndarray, float | None]:
        """``(probabilities, value)``: :meth:`probabilities`, and the value head's expected result in [-1, 1] for
        ``colour`` (the side to play), or None when the net has no value head."""
        logits, value = self._run(record_or_moves, colour, setup)
        z = logits.astype(np.float64)
        z -= z.max()
        e = np.exp(z)
        return e / e.sum(), value

    def probabilities(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """float64 [N*N + 1] move probabilities (softmax over every point and pass, legal or not)."""
        return self.evaluate(record_or_moves, colour, setup)[0]

    @property
    def has_value(self) -> bool:
        """Whether the net has a value head (its forward pass returns ``(logits, value)``); the first call may
        evaluate the empty board to find out."""
        if self._has_value is None:
            self._run([], BLACK)
        return bool(self._has_value)


def fresh_policy(model_name: str, board_size: int, *, feature_set: str | None = None, seed: int = 0, rank=None,
                 **model_kwargs) -> Policy:
    """A randomly initialised named model (``kifunet.models.create``) as a policy: for tests and smoke runs."""
    from flax import nnx

    from kifunet import models

    fs = feature_set or feature_set_for(models.default_in_planes(model_name))
    in_planes = features_mod.get(fs).num_planes
    net = models.create(model_name, board_size=board_size, in_planes=in_planes, rngs=nnx.Rngs(seed), **model_kwargs)
    return Policy(net, fs, board_size, rank, description=f"{model_name} (random weights, seed {seed})")


def load_policy(checkpoint_dir: str | os.PathLike, rank=None, *, step: int | None = None,
                feature_set: str | None = None, board_size: int | None = None) -> Policy:
    """The trained net of a training run as a policy, computing in float32 whatever dtype it was trained in.

    ``checkpoint_dir``: the run's workdir (the newest checkpoint unless ``step``), its ``checkpoints``
    directory, or one step's directory; the net is rebuilt by :func:`kifunet.eval.runs.load_net` (feature set and
    board size: the arguments, else the training dataset's manifest, else the checkpoint's metadata).
    """
    from kifunet.eval.runs import load_net

    net = load_net(str(checkpoint_dir), step=step, feature_set=feature_set, board_size=board_size, dtype="float32")
    desc = f"{net.info['model']} from {os.path.basename(net.info['workdir'])}"
    if net.info.get("step") is not None:
        desc += f" step {net.info['step']}"
    return Policy(net.model, features_mod.get(net.feature_set), net.board_size, rank, description=desc)
