"""Data preparation: SGF records -> the rules engine -> feature planes -> a built dataset, and reading it back.

=====================  ==================================================================================
module or package      what it holds
=====================  ==================================================================================
*conventions*
``coords``             coordinates: SGF, GTP, sgfmill, flat indices
``ranks``              rank spellings -> one integer scale
``symmetries``         the 8 board symmetries on planes and move indices (NumPy and JAX)
``game``               a game record as the engine consumes it (``GameRecord``, ``GameInfo``, colours)
``results``            game results: ``RE`` -> kind, winner, margin; a position's ``outcome``
``errors``             ``UserError``, the base of every bad-input error, and the named ones (``SgfError``,
                       ``IllegalMoveError``); :func:`~kifunet.data_prep.errors.naming` (an ``OSError`` named)
``paths``              where the installed package finds files: the sample corpus, the default net, ``runs/``
*jobs*
``rules``              the numba rules engine, ladders, per-point facts of a game
``sgf``                SGF records and the files, directories and archives that hold them
``planes``             the feature sets and the replay of a record into positions with planes
``datasets``           a built dataset's format (shards, manifest) and reading it (``open_split``)
``building``           ``kifunet build``: filters, splits, the three stages, workers, the TFDS builder
=====================  ==================================================================================

Imports run one way: conventions <- ``rules`` <- ``sgf`` <- ``planes`` <- ``datasets`` <- ``building``
(``tests/test_import_graph.py``). ``from kifunet.data_prep import replay`` resolves a moved module lazily
(``__getattr__``); ``import kifunet.data_prep.replay`` does not (docs/what_moved.md).
"""

import importlib

#: module -> the sub-package that holds it since the split (the old flat names keep working as attributes)
MOVED = {
    "board": "rules", "ladders": "rules", "analysis": "rules",
    "sgf_io": "sgf", "inputs": "sgf",
    "features": "planes", "replay": "planes",
    "build": "building", "build_space": "building", "filters": "building", "splits": "building",
    "encode_stage": "building", "plan_stage": "building", "write_stage": "building", "worker_pool": "building",
    "progress": "building", "tfds_go_moves": "building",
    "dataset": "datasets", "dataset_base": "datasets", "shards": "datasets", "manifest": "datasets",
    "reader": "datasets", "tfds_reader": "datasets", "verify": "datasets", "stats": "datasets",
}


def __getattr__(name: str):
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{MOVED[name]}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
