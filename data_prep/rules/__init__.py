"""The rules engine and what is read off it: one position's legal moves, captures and ladders.

* ``board``: the numba rules engine (captures, ko, suicide, positional superko)
* ``ladders``: ladder reading to the end (capture and escape)
* ``analysis``: per-point facts of every position of a game (``GameAnalysis``)
"""
