"""The rules engine and what is read off it: one position's legal moves, captures, ladders and, at
the end of a game, dead stones and the score.

* ``board``: the numba rules engine (captures, ko, suicide, positional superko)
* ``ladders``: ladder reading to the end (capture and escape)
* ``analysis``: per-point facts of every position of a game (``GameAnalysis``)
* ``life_death`` and ``eye_space``: the dead-stone estimate (``estimate`` -> ``Estimate``)
* ``scoring``: area scores and result text; ``final_ownership``: a finished game's ownership target
"""
