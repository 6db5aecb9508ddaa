"""Data preparation: SGF records -> the rules engine -> feature planes -> a built dataset, and reading it back.

=====================  ==================================================================================
module                 what it holds
=====================  ==================================================================================
*conventions*
``coords``             coordinates: SGF, GTP, sgfmill, flat indices (the table of every system)
``ranks``              rank spellings -> one integer scale
``symmetries``         the 8 board symmetries on planes and move indices (NumPy and JAX)
``game``               a game record as the engine consumes it (``GameRecord``, ``GameInfo``, colours)
``results``            game results: ``RE`` -> kind, winner, margin; a position's ``outcome``
``errors``             the named bad-input errors (``SgfError``, ``IllegalMoveError``)
*a game*
``sgf_io``             read one SGF record (sgfmill, encodings, GoGoD/KGS metadata)
``board``              the numba rules engine (captures, ko, suicide, superko)
``ladders``            ladder reading to the end
``analysis``           per-point facts of every position of a game (``GameAnalysis``)
``features``           the feature-plane registry and the named feature sets
``replay``             a record -> positions with their planes (``iter_positions``, ``encode_game``)
*building a dataset* (``kifunet build``)
``inputs``             enumerate the records of files, directories and archives, read in place
``filters``            game and position filters, presets, config files
``splits``             which split a game lands in
``build``              the command's orchestration: options, fingerprint and lock, ``build()``
``build_space``        the disk space a build needs: the estimate before it starts, the check before a write
``encode_stage``       stage 1: records -> encoded work units (spill files)
``plan_stage``         stage 2: dedupe, accounting, games tables, shuffle, shard plan
``write_stage``        stage 3: spill -> HDF5 shards
``worker_pool``        worker processes with crash isolation
``progress``           the progress display
``shards``             the HDF5 shard and games-table file format
``manifest``           ``manifest.json``: format, base columns, reading and writing
``tfds_go_moves``      the TFDS ``go_moves`` builder (the same stages, written as TFDS records)
*reading a dataset*
``dataset``            ``open_split(spec, split)``: the one entry point, HDF5 or ``tfds:``
``dataset_base``       the contract every container implements (``DatasetSplit``, blocks, errors)
``reader``             the HDF5 container (``Reader``)
``tfds_reader``        the TFDS container (``TfdsReader``)
``verify``             files checked against the sha256 and rows their dataset recorded (once per process)
``stats``              ``kifunet stats`` / ``kifunet inspect``
=====================  ==================================================================================

Dependencies run one way: conventions <- a game <- building <- reading; ``tests/test_import_graph.py`` checks
that there is no import cycle and no use of another module's private names.
"""
