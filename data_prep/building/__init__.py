"""``kifunet build``: records -> filtered, encoded, shuffled, sharded datasets (HDF5, or TFDS records).

* ``build``: the command's orchestration: options, fingerprint and lock, ``build()``
* ``build_space``: the disk space a build needs: the estimate before it starts, the check before a write
* ``filters``: game and position filters, presets, config files
* ``splits``: which split a game lands in
* ``encode_stage``: stage 1: records -> encoded work units (spill files)
* ``plan_stage``: stage 2: dedupe, accounting, games tables, shuffle, shard plan
* ``write_stage``: stage 3: spill -> HDF5 shards
* ``worker_pool``: worker processes with crash isolation
* ``progress``: the progress display
* ``tfds_go_moves``: the TFDS ``go_moves`` builder (the same stages, written as TFDS records)
"""
