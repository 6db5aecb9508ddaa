"""The probe set: Go positions that test long-distance understanding, and how often a net finds their answers.

:func:`load_probes` reads ``eval/probes.sgf`` (shipped in the wheel): one SGF game per probe, its final move a
correct answer, the root's ``XC`` the category, ``XA`` every accepted answer, ``XT`` the key stones. :func:`score`
replays each with the predictor's feature set and predicts the position before the final move (rank ``UNKNOWN``
unless ``as_rank``; legal moves are the rules engine's plus pass), giving per category and overall ``top1``,
``top5`` and a uniform legal choice's ``uniform_top1`` / ``uniform_top5`` (``A / L`` and ``1 - C(L - A, 5) / C(L,
5)`` per probe, ``A`` answers among ``L`` legal moves, averaged).
"""

from __future__ import annotations

import dataclasses
import math
import os
from importlib import resources

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.errors import UserError
from kifunet.data_prep.game import MOVE, GameRecord

FORMAT = "kifunet-probes"
FORMAT_VERSION = 1


def default_path() -> str:
    """The committed probe file (package data of ``kifunet.eval``)."""
    return str(resources.files("kifunet.eval") / "probes.sgf")


@dataclasses.dataclass
class Probe:
    name: str
    category: str
    record: GameRecord        # setup, history moves, and the answer as the final move
    answers: tuple[int, ...]  # flat indices of every accepted answer
    keys: tuple[int, ...]     # the key stones of the category's check

    @property
    def size(self) -> int:
        return self.record.size

    @property
    def mover(self) -> int:
        return int(self.record.colours[self.record.kinds == MOVE][-1])


class ProbeError(UserError, ValueError):
    """A probe file that cannot be used (unreadable, no probes, a probe without its properties), or probes the net
    cannot play; the message names the file and probe."""


def _points(node, ident: str, n: int, where: str) -> tuple[int, ...]:
    try:
        raw = node.get_raw_list(ident)
    except KeyError:
        raise ProbeError(f"{where}: no {ident} property") from None
    try:
        return tuple(coords.to_flat(coords.from_sgf(v.decode("ascii"), n), n) for v in raw)
    except (ValueError, UnicodeDecodeError):
        raise ProbeError(f"{where}: {ident} has a malformed point") from None


def load_probes(path: str | os.PathLike | None = None) -> list[Probe]:
    """Every probe of ``path`` (default: :func:`default_path`); ValueError naming the file and probe on bad input."""
    from sgfmill import sgf

    from kifunet.data_prep.errors import SgfError
    from kifunet.data_prep.sgf import sgf_io

    path = os.fspath(path) if path is not None else default_path()
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ProbeError(f"{path}: cannot read the probe file: {e.strerror or e}") from None
    trees = sgf_io.split_game_trees(raw) if raw.strip() else []
    if not trees:
        raise ProbeError(f"{path}: no probes in the file")
    out = []
    for i, tree in enumerate(trees):
        where = f"{path}#{i}"
        try:
            record = sgf_io.load_game(tree, path=where)
            root = sgf.Sgf_game.from_bytes(tree).get_root()
        except (SgfError, ValueError) as e:
            raise ProbeError(f"{where}: not a readable probe: {e}") from None
        n = record.size
        if not root.has_property("XC"):
            raise ProbeError(f"{where}: no XC (category) property")
        moves = record.points[record.kinds == MOVE]
        answers = _points(root, "XA", n, where)
        if len(moves) < 2 or int(moves[-1]) not in answers:
            raise ProbeError(f"{where}: the final move is not one of the accepted answers (XA)")
        name = root.get("GN") if root.has_property("GN") else f"probe-{i}"
        out.append(Probe(name=name, category=root.get("XC"), record=record, answers=answers,
                         keys=_points(root, "XT", n, where)))
    return out


def _uniform_top5(a: int, legal: int) -> float:
    if legal <= 5:
        return 1.0 if a else 0.0
    return 1.0 - math.comb(legal - a, 5) / math.comb(legal, 5)


def encode(probes: list[Probe], feature_set, *, as_rank: int | None = None) -> dict:
    """The probe positions as one batch (``planes`` uint8 ``[P, N, N, C]``, ``player_rank``, ``to_move``) and their
    legal masks (``legal`` bool ``[P, N*N + 1]``, pass legal)."""
    from kifunet.data_prep.planes import features, replay
    from kifunet.data_prep.rules import analysis

    fs = features.get(feature_set) if isinstance(feature_set, str) else feature_set
    planes, rank, to_move, legal = [], [], [], []
    for p in probes:
        enc = replay.encode_game(p.record, fs, path=p.record.info.path)
        cols = enc.columns()
        if as_rank is not None:
            cols["player_rank"] = np.full_like(cols["player_rank"], as_rank)
        planes.append(fs.assemble(enc.planes[-1:], {k: v[-1:] for k, v in cols.items()})[0])
        rank.append(int(cols["player_rank"][-1]))
        to_move.append(int(enc.to_move[-1]))
        a = replay.analyse_game(p.record, analysis.F_LIBS_AFTER_PLA, path=p.record.info.path)
        nn = p.size * p.size
        mask = np.ones(nn + 1, dtype=bool)
        mask[:nn] = a.legal[-1].astype(bool)
        legal.append(mask)
    return {"planes": np.stack(planes), "player_rank": np.array(rank, np.int32), "to_move": np.array(to_move, np.int32),
            "legal": np.stack(legal)}


def score(predictor, probes: list[Probe], *, as_rank: int | None = None) -> dict:
    """Top-1 / top-``k`` hit rates of ``predictor`` on ``probes``, per category and overall, beside a uniform legal
    choice's; ``as_rank`` tells the net every mover has this rank."""
    from kifunet.eval.legality import top_moves

    if not probes:
        raise ProbeError("no probes to score")
    sizes = {p.size for p in probes}
    if sizes != {predictor.board_size}:
        raise ProbeError(f"the probes are {'/'.join(f'{s}x{s}' for s in sorted(sizes))}; the net plays "
                         f"{predictor.board_size}x{predictor.board_size}")
    batch = encode(probes, predictor.fs, as_rank=as_rank)
    logits = predictor.predict(batch)
    rows = []
    for i, p in enumerate(probes):
        allowed = batch["legal"][i]
        top = top_moves(logits[i], allowed, 5)
        acc = set(p.answers)
        n_legal = int(allowed.sum())
        n_acc = len(acc)
        rows.append({"name": p.name, "category": p.category, "answers": sorted(acc), "top": top,
                     "hit1": bool(top and top[0] in acc), "hit5": bool(acc & set(top)),
                     "uniform_top1": n_acc / n_legal, "uniform_top5": _uniform_top5(n_acc, n_legal)})

    def summary(rs):
        m = len(rs)
        return {"count": m, "top1": sum(r["hit1"] for r in rs) / m, "top5": sum(r["hit5"] for r in rs) / m,
                "uniform_top1": sum(r["uniform_top1"] for r in rs) / m,
                "uniform_top5": sum(r["uniform_top5"] for r in rs) / m}

    cats = list(dict.fromkeys(p.category for p in probes))
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "net": dict(predictor.info),
            "settings": {"player_rank": "record (UNKNOWN)" if as_rank is None else int(as_rank),
                         "legal": "rules engine (suicide illegal, simple ko) and pass"},
            "categories": {c: summary([r for r in rows if r["category"] == c]) for c in cats},
            "overall": summary(rows), "probes": rows}


def format_score(res: dict) -> str:
    """A small table: one row per category and the overall one, percentages."""
    lines = [f"{'category':<12} {'probes':>6} {'top-1 %':>8} {'top-5 %':>8} {'uniform top-1 %':>16} "
             f"{'uniform top-5 %':>16}"]
    for name, s in [*res["categories"].items(), ("overall", res["overall"])]:
        lines.append(f"{name:<12} {s['count']:>6} {100 * s['top1']:>8.1f} {100 * s['top5']:>8.1f} "
                     f"{100 * s['uniform_top1']:>16.2f} {100 * s['uniform_top5']:>16.2f}")
    return "\n".join(lines)
