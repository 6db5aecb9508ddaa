"""Positions as feature planes: the named feature sets and the replay of a record into positions.

* ``features``: the feature-plane registry and the named feature sets (``FeatureSet``)
* ``replay``: a record -> positions with their planes (``iter_positions``, ``encode_game``)
"""
