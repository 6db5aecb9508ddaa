"""Data preparation: SGF records -> the rules engine -> feature planes -> a built dataset, and reading it back.

Conventions:

* ``coords``: coordinates: SGF, GTP, sgfmill, flat indices
* ``ranks``: rank spellings -> one integer scale
* ``symmetries``: the 8 board symmetries on planes and move indices (NumPy and JAX)
* ``game``: a game record as the engine consumes it (``GameRecord``, ``GameInfo``, colours)
* ``results``: game results: ``RE`` -> kind, winner, margin; a position's ``outcome``
* ``errors``: ``UserError``, the base of every bad-input error, and the named ones (``SgfError``,
  ``IllegalMoveError``); :func:`~kifunet.data_prep.errors.naming` (an ``OSError`` named)
* ``paths``: where the installed package finds files: the sample corpus, the default net, ``runs/``

Jobs:

* ``rules``: the numba rules engine, ladders, per-point facts of a game
* ``sgf``: SGF records and the files, directories and archives that hold them
* ``planes``: the feature sets and the replay of a record into positions with planes
* ``datasets``: a built dataset's format (shards, manifest) and reading it (``open_split``)
* ``building``: ``kifunet build``: filters, splits, the three stages, workers, the TFDS builder

Imports run one way: conventions <- ``rules`` <- ``sgf`` <- ``planes`` <- ``datasets`` <- ``building``
(``tests/test_import_graph.py``).
"""
