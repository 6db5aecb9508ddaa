"""A built dataset: its file format, and reading it back (HDF5 or TFDS behind one contract).

* ``dataset``: ``open_split(spec, split)``: the one entry point, HDF5 or ``tfds:``
* ``dataset_base``: the contract every container implements (``DatasetSplit``, blocks, errors)
* ``shards``: the HDF5 shard and games-table file format
* ``manifest``: ``manifest.json``: format, base columns, reading and writing
* ``reader``: the HDF5 container (``Reader``)
* ``tfds_reader``: the TFDS container (``TfdsReader``)
* ``verify``: files checked against the sha256 and rows their dataset recorded (once per process)
* ``stats``: ``kifunet stats`` / ``kifunet inspect``
"""
