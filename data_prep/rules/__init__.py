"""The rules engine and what is read off it: one position's legal moves, captures, ladders and, at
the end of a game, dead stones and the score.

================  ================================================================================
module            what it holds
================  ================================================================================
``board``         the numba rules engine (captures, ko, suicide, positional superko)
``ladders``       ladder reading to the end (capture and escape)
``analysis``      per-point facts of every position of a game (``GameAnalysis``)
``life_death``    the dead-stone estimate: ``estimate`` -> ``Estimate`` (ownership, status, ``score``)
``eye_space``     killable eye shapes and their vital points (``killable_eyes``)
``scoring``       area scores (Tromp-Taylor, with dead stones removed) and result text
================  ================================================================================
"""
