"""kifunet: next-move prediction for Go from SGF archives.

The code lives in the top-level folders of the repository and is installed under this namespace:
``data_prep/`` -> ``kifunet.data_prep``, ``models/`` -> ``kifunet.models``, ``train/`` -> ``kifunet.train``,
``eval/`` -> ``kifunet.eval``, ``play/`` -> ``kifunet.play``, ``samples/`` -> ``kifunet.samples`` (the sample
corpus, shipped as package data). Here: ``cli`` (the ``kifunet`` command), ``commands/`` (one module per
subcommand), ``errors`` (the command line's error style), ``parent_watch`` (worker processes that end with the
process that started them).
"""

__version__ = "0.1.0"
