"""Play: a policy net as a Go player, a GTP engine around it, and matches against other GTP programs.

==========================  =====================================================================================
module                      what it holds
==========================  =====================================================================================
``policy``                  ``Policy`` (net + feature set + rank -> move probabilities of a position),
                            ``position_record``, ``fresh_policy`` (random weights), ``load_policy`` (a training run)
``gtp_engine``              the GTP engine: ``Engine`` (commands, ``serve``)
``move_choice``             how a move is chosen: ``choose_move`` (eye, pass and resign rules, GoNN sampling),
                            ``PlaySettings``
``gtp_analysis``            GTP analysis for GUIs (Sabaki, Lizzie): ``lz-analyze``/``kata-analyze`` arguments
                            (``parse_request``), candidates, the ``info`` line writer, ``AnalysisRun``
``gtp_gogui``               GoGui's analyze commands: ``ANALYZE_COMMANDS`` (what ``gogui-analyze_commands`` lists),
                            the responses (``policy_gfx``, ``policy_dboard``, ``value_line``)
``gtp_sgf``                 ``loadsgf``/``printsgf``: ``read_game`` (a file's main line up to a move number or a
                            vertex), ``game_sgf`` (the engine's game as SGF), ``file_argument``
``time_manager``            GTP's time commands read, the per-move budget (``move_budget``), the symmetries a move
                            affords (``choose_symmetries``), the clock (``TimeManager``)
``scoring``                 Tromp-Taylor area score (``area_owner``, ``area_score``), result text
                            (``format_score``, ``parse_result``)
``gtp_client``              talking to a GTP program: ``GtpProcess`` (one command, one response), ``EngineError``,
                            ``resolve_command``, ``child_env``; Pachi: ``pachi[:PLAYOUTS]`` (``pachi_command``),
                            finding the binary (``find_pachi``, ``pachi_dir``, ``speaks_pachi_gtp``)
``match``                   ``MatchConfig``; the game loop (``play_game``, ``referee_score``), ``run_match``
                            (parallel, resumable), ``run_rank_experiment``
``match_sgf``               a match game on disk: ``game_path``, ``write_game``, ``read_game``, ``finished_games``
``match_report``            ``GameResult``, ``MatchSummary``, ``summarise``, ``wilson_interval``,
                            ``format_summary``, ``format_rank_table``
``export_onnx``             ``kifunet export``: a run's net to one ONNX file (jax2onnx) described by its metadata,
                            checked against JAX before it is written (``export_run``, ``export_model``)
``onnx_policy``             the exported file's format (inputs, outputs, metadata), ``OnnxNet`` (onnxruntime),
                            ``OnnxPolicy`` / ``load_onnx_policy``: Policy over the file, without JAX
==========================  =====================================================================================

``kifunet.play`` imports :mod:`kifunet.eval` (``load_policy`` rebuilds a net with :func:`kifunet.eval.runs.load_net`)
and :mod:`kifunet.data_prep`; neither imports ``kifunet.play``.

Commands: ``kifunet gtp``, ``kifunet match``, ``kifunet export``. Scripts: ``scripts/make_sample_corpus.py`` (GNU Go self-play over
:mod:`~kifunet.play.gtp_client`), ``scripts/build_pachi.py`` (builds the Pachi that ``pachi[:PLAYOUTS]`` runs).
"""
