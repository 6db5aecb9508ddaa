"""Evaluation: metrics as sums and counts, the published tables as data, and pictures.

* ``metrics``: top-k (tie rule), nats, perplexity; exact sums; breakdowns; ensemble; legality planes
* ``legality``: ``top_moves``; legal-move masks for dataset rows (from the planes, else a replay)
* ``evaluate``: ``Predictor`` (model + feature set -> logits), ``evaluate`` a split, result JSON
* ``runs``: run directories for eval and the notebooks; ``load_run``
* ``probes``: the probe positions (``probes.sgf``) and a net's top-1 / top-5 on them
* ``published``: ``published.toml``: every published row with its dataset spec
* ``tables``: our results beside the published rows (Markdown, HTML)
* ``board_image``: a position with the policy as a heatmap over legal points, top-k labelled
* ``plots``: learning curves, top-n accuracy curve, accuracy against nats
* ``attribution``: which candidate profile a profiled net finds likeliest for whole games
* ``era``: a profiled net's prediction with each row's own date against a forced year
* ``page_blocks``: the generated blocks of the manual's pages (``<!-- NAME:start -->`` ... ``end``)

Playing a net lives in :mod:`kifunet.play`.
"""
