"""kifunet: next-move prediction for Go from SGF archives.

The code lives in the top-level folders of the repository and is installed under this namespace:
``data_prep/`` -> ``kifunet.data_prep``, ``models/`` -> ``kifunet.models``, ``train/`` -> ``kifunet.train``,
``eval/`` -> ``kifunet.eval``.
"""

__version__ = "0.1.0"
