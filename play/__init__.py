"""Play: a policy net as a Go player, a GTP engine around it, and matches against other GTP programs.

==========================  =====================================================================================
module                      what it holds
==========================  =====================================================================================
``policy``                  ``Policy`` (net + feature set + rank -> move probabilities of a position),
                            ``position_record``, ``fresh_policy`` (random weights), ``load_policy`` (a training run)
``lazy_policy``             ``LazyPolicy``: the policy interface at once from the run's config (board, features, value
                            head), the net loaded and compiled in a background thread (``kifunet gtp``'s fast start)
``forward_cache``           a trained net's exported forward pass (``jax.export``) and weights, cached on disk and
                            checked by sha256: a warm ``kifunet gtp`` start imports JAX only, not Flax or orbax
``life_death``              the dead-stone estimate: ``estimate`` -> ``Estimate`` (ownership, ALIVE/DEAD/SEKI per
                            stone, ``score`` with dead stones removed); random playouts on the rules engine, Benson
``gtp_engine``              the GTP engine: ``Engine`` (commands, ``serve``)
``game_state``              the game a GTP engine plays: ``GameState`` (board, setup, moves, undo log of O(1)
                            memory per move, a loaded game's players and rules), ``chains_in``
``gtp_args``                GTP number arguments of any length: ``is_digits``, ``bounded_int``, ``shown``
``move_choice``             how a move is chosen: ``choose_move`` (eye, pass, dead-stone and resign rules, GoNN
                            sampling), ``PlaySettings``
``gtp_analysis``            GTP analysis for GUIs (Sabaki, Lizzie): ``lz-analyze``/``kata-analyze`` arguments
                            (``parse_request``), candidates, the ``info`` line writer, ``AnalysisRun``
``gtp_gogui``               GoGui's analyze commands: ``ANALYZE_COMMANDS`` (what ``gogui-analyze_commands`` lists),
                            the responses (``policy_gfx``, ``policy_dboard``, ``policy_pspairs``, ``value_line``)
``gtp_sgf``                 ``loadsgf``/``printsgf``: ``read_file`` (a regular file of at most ``MAX_SGF_BYTES``),
                            ``read_game`` (a file's main line up to a move number or a vertex), ``game_sgf`` (the
                            engine's game as SGF), ``file_argument``
``time_manager``            GTP's time commands read, the per-move budget (``move_budget``), the symmetries a move
                            affords (``choose_symmetries``), the clock (``TimeManager``)
``scoring``                 area scores: Tromp-Taylor (``area_owner``, ``area_score``) and with dead stones removed
                            (``remove_stones``, ``score_without``), result text (``format_score``, ``parse_result``)
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

``kifunet.play`` imports :mod:`kifunet.train` (``load_policy`` rebuilds a net with :func:`kifunet.train.nets.load_net`),
:mod:`kifunet.eval` (:func:`kifunet.eval.legality.top_moves`) and :mod:`kifunet.data_prep`; none imports
``kifunet.play``.

Commands: ``kifunet gtp``, ``kifunet match``, ``kifunet export``. Scripts: ``scripts/make_sample_corpus.py`` (GNU Go self-play over
:mod:`~kifunet.play.gtp_client`), ``scripts/build_pachi.py`` (builds the Pachi that ``pachi[:PLAYOUTS]`` runs).
"""
