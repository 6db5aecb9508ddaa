"""The nets kept in the repository, as package data (``kifunet.pretrained``), no code.

The default net (:data:`kifunet.data_prep.paths.DEFAULT_NET`) ships in the wheel; find it with
:func:`kifunet.data_prep.paths.default_net`. ``README.md`` here says how each run was trained and measured.
"""
