"""The sample corpus as package data (``kifunet.samples``): ``README.md`` and ``gnugo/*.sgf``, no code.

Find it with :func:`kifunet.data_prep.paths.samples_dir`; it works the same from a source checkout and an installed wheel.
"""
