"""Play: a policy net as a Go player, a GTP engine around it, and matches against other GTP programs.

Modules: ``policy`` (``Policy``, ``load_policy``), ``lazy_policy`` (the net loaded in a background thread),
``forward_cache`` (a net's exported forward pass cached on disk), ``gtp_engine`` over its rooms ``game_state``, ``gtp_policy``, ``gtp_game`` and the handler
groups ``gtp_core``, ``gtp_moves``, ``gtp_time``, ``gtp_sgf``, ``gtp_gogui``, ``gtp_analyze`` (with
``gtp_protocol``, ``gtp_args``, ``gtp_analysis``), ``move_choice``, ``time_manager``,
``gtp_client`` (talking to a GTP program), ``match``, ``match_sgf``, ``match_report``, ``export_onnx`` and
``onnx_policy`` (the ONNX file and a policy over it without JAX)."""
