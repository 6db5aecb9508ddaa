"""A policy for play: a model, its feature set and a rank, turned into move probabilities for a position.

>>> from flax import nnx
>>> from kifunet import models
>>> from kifunet.eval.policy import Policy
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

:func:`load_policy` rebuilds a trained net from a training run directory (``train/checkpointing.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from kifunet.data_prep import features as features_mod
from kifunet.data_prep import ranks, replay
from kifunet.data_prep.board import Board
from kifunet.data_prep.game import MOVE, SETUP, GameInfo, GameRecord

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
    def logits(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """float32 [N*N + 1] logits of the position with ``colour`` to play."""
        x = self.planes(record_or_moves, colour, setup)[None].astype(np.float32)
        out = self._forward(self._state, x, np.array([self.rank], np.int32), np.array([int(colour)], np.int32))
        logits = np.asarray(out[0], dtype=np.float32)
        if self.has_pass is None:
            from kifunet.models import NO_PASS_LOGIT

            self.has_pass = bool(logits[-1] > NO_PASS_LOGIT / 2)
        return logits

    def probabilities(self, record_or_moves, colour: int, setup=()) -> np.ndarray:
        """float64 [N*N + 1] move probabilities (softmax over every point and pass, legal or not)."""
        z = self.logits(record_or_moves, colour, setup).astype(np.float64)
        z -= z.max()
        e = np.exp(z)
        return e / e.sum()


def fresh_policy(model_name: str, board_size: int, *, feature_set: str | None = None, seed: int = 0, rank=None,
                 **model_kwargs) -> Policy:
    """A randomly initialised named model (``kifunet.models.create``) as a policy: for tests and smoke runs."""
    from flax import nnx

    from kifunet import models

    fs = feature_set or feature_set_for(models.default_in_planes(model_name))
    in_planes = features_mod.get(fs).num_planes
    net = models.create(model_name, board_size=board_size, in_planes=in_planes, rngs=nnx.Rngs(seed), **model_kwargs)
    return Policy(net, fs, board_size, rank, description=f"{model_name} (random weights, seed {seed})")


def _run_paths(path: Path, step: int | None) -> tuple[Path, Path]:
    """(workdir holding config.json, what to give checkpointing.load_weights) of a run, checkpoints or step dir."""
    path = path.resolve()
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such training run")
    workdir = path
    for cand in (path, path.parent, path.parent.parent):
        if (cand / "config.json").exists() or (cand / "checkpoints").is_dir():
            workdir = cand
            break
    target = path
    if step is not None:
        target = workdir / "checkpoints" / str(int(step))
        if not target.is_dir():
            raise FileNotFoundError(f"{workdir}: no checkpoint for step {step} (have: "
                                    f"{', '.join(sorted(p.name for p in (workdir / 'checkpoints').glob('[0-9]*')))})")
    return workdir, target


def _lookup(tree, names: tuple[str, ...]):
    """First value under any of ``names`` in nested dicts (breadth first); a {'name': ...} dict gives its name."""
    level = [tree]
    while level:
        nxt = []
        for d in level:
            if not isinstance(d, dict):
                continue
            for k in names:
                if k in d and d[k] not in (None, "", {}):
                    v = d[k]
                    return v.get("name") if isinstance(v, dict) else v
            nxt.extend(v for v in d.values() if isinstance(v, dict))
        level = nxt
    return None


def load_policy(checkpoint_dir: str | os.PathLike, rank=None, *, step: int | None = None,
                feature_set: str | None = None, board_size: int | None = None) -> Policy:
    """The trained net of a training run as a policy.

    ``checkpoint_dir``: the run's workdir (``config.json`` + ``checkpoints/<step>/``, the newest step unless
    ``step``), its ``checkpoints`` directory, or one step's directory. Weights come from
    :func:`kifunet.train.checkpointing.load_weights` (``params/...`` and ``extra/...``: parameters and BatchNorm
    statistics). The model is rebuilt as ``train/train.py`` built it: ``config.model.name``,
    ``rank_embedding`` and ``config.model.kwargs``. Board size and feature set: ``board_size`` /
    ``feature_set`` if given, else the training dataset's ``manifest.json`` (``config.dataset``), else
    ``config.expect_features`` / the model's default planes. It computes in float32 whatever dtype it was
    trained in.
    """
    import inspect
    import json

    from flax import nnx

    from kifunet import models
    from kifunet.models import registry
    from kifunet.train import checkpointing

    workdir, target = _run_paths(Path(checkpoint_dir), step)
    weights, meta = checkpointing.load_weights(str(target))
    config = {}
    if (workdir / "config.json").exists():
        config = json.loads((workdir / "config.json").read_text())
    model_cfg = config.get("model") if isinstance(config.get("model"), dict) else {}
    name = model_cfg.get("name") or (meta.get("model") if isinstance(meta.get("model"), str) else None)
    if not name:
        raise ValueError(f"{workdir}: cannot tell which model was trained (no config.json model.name, no model "
                         f"in the checkpoint's metadata)")
    manifest = {}
    dataset = config.get("dataset") or meta.get("dataset")
    if dataset and (feature_set is None or board_size is None):
        mpath = Path(dataset) / "manifest.json"
        if mpath.exists():
            manifest = json.loads(mpath.read_text())
    fs = (feature_set or _lookup(manifest, ("features",)) or config.get("expect_features")
          or _lookup(meta, ("feature_set", "features")))
    n = board_size or manifest.get("board_size") or _lookup(meta, ("board_size",)) or _lookup(config, ("board_size",))
    if fs is None:
        fs = feature_set_for(models.default_in_planes(name))
    if n is None:
        raise ValueError(f"{workdir}: the board size is recorded nowhere (the training dataset {dataset!r} and its "
                         f"manifest.json are not here); give --board-size (and --features if not the default)")
    fset = features_mod.get(fs)
    family = registry.spec(name).family
    accepted = set(inspect.signature(family.__init__).parameters) - {"board_size", "in_planes", "dtype",
                                                                     "param_dtype", "rngs", "self"}
    overrides = {k: v for k, v in model_cfg.items() if k in accepted}
    overrides.update({k: (tuple(v) if isinstance(v, list) else v)
                      for k, v in (model_cfg.get("kwargs") or {}).items() if k not in ("dtype", "param_dtype")})
    net = models.create(name, board_size=int(n), in_planes=fset.num_planes, rngs=nnx.Rngs(0), **overrides)
    _, params, extra = nnx.split(net, nnx.Param, ...)
    template = {"params": params, "extra": extra}
    shapes = {k: tuple(np.shape(v)) for k, v in checkpointing.flatten_state(template).items()}
    missing = sorted(set(shapes) - set(weights))
    unexpected = sorted(set(weights) - set(shapes))
    wrong = sorted(k for k in set(shapes) & set(weights) if tuple(np.shape(weights[k])) != shapes[k])
    if missing or unexpected or wrong:
        raise ValueError(f"{target}: checkpoint does not fit {name} ({int(n)}x{int(n)}, {fset.num_planes} planes, "
                         f"{overrides}): missing {missing[:5]}, unexpected {unexpected[:5]}, other shapes "
                         f"{[(k, np.shape(weights[k]), shapes[k]) for k in wrong[:5]]}")
    restored = checkpointing.unflatten_state(template, weights)
    nnx.update(net, restored["params"], restored["extra"])
    step_seen = meta.get("step", step)
    desc = f"{name} from {workdir.name}" + (f" step {step_seen}" if step_seen is not None else "")
    return Policy(net, fset, int(n), rank, description=desc)
