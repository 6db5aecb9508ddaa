"""Play: a policy net as a Go player, a GTP engine around it, and matches against other GTP programs.

==========================  =====================================================================================
module                      what it holds
==========================  =====================================================================================
``policy``                  ``Policy`` (net + feature set + rank -> move probabilities), ``load_policy``
``lazy_policy``             ``LazyPolicy``: the policy interface at once, the net loaded in a background thread
``forward_cache``           a trained net's exported forward pass and weights, cached on disk (sha256-checked)
``gtp_engine``              the GTP engine ``Engine``; its handler groups are the ``gtp_*`` modules
``game_state``              the game a GTP engine plays: ``GameState`` (board, setup, moves, O(1) undo)
``gtp_args``                GTP number arguments of any length
``move_choice``             how a move is chosen: ``choose_move``, ``PlaySettings``
``gtp_analysis``            ``lz-analyze`` / ``kata-analyze`` arguments, candidates and ``info`` lines
``gtp_gogui``               GoGui's analyze commands and their responses
``gtp_sgf``                 ``loadsgf`` / ``printsgf``
``time_manager``            GTP's time commands, the per-move budget, the symmetries a move affords
``gtp_client``              talking to a GTP program (``GtpProcess``); Pachi specs and binary
``match``                   the game loop, ``run_match`` (parallel, resumable), ``run_rank_experiment``
``match_sgf``               a match game on disk
``match_report``            results, Wilson intervals, tables
``export_onnx``             ``kifunet export``: a run's net to one ONNX file, checked against JAX
``onnx_policy``             ``OnnxPolicy``: a policy over the exported file, without JAX
==========================  =====================================================================================

``kifunet.play`` imports :mod:`kifunet.train`, :mod:`kifunet.eval` and :mod:`kifunet.data_prep`; none imports it.
"""
