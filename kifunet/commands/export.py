"""``kifunet export RUN --out net.onnx``: a training run's net as one ONNX file that says what it is.

The file's inputs, outputs and metadata: :mod:`kifunet.play.onnx_policy`; how it is made and checked:
:mod:`kifunet.play.export_onnx`. ``kifunet gtp --model net.onnx`` plays it with onnxruntime, without JAX.
Inputs are checked before JAX loads: the run directory and its checkpoint, the output's folder, the extra,
``--profile``'s text (a net without a profile input is refused once loaded: the profile would change nothing).
Every file records ``profile_input`` and ``profile_encoding``; ``--profile`` adds the default profile
(``profile``, ``profile_vector``), which ``kifunet gtp --model FILE.onnx`` plays with unless told another.
"""

from __future__ import annotations

import argparse

from kifunet.commands import option_types, unsealed
from kifunet.errors import CommandError

HELP = ("export a run's net to ONNX, described by its metadata (features, board size, rank encoding, "
        "value head, training data); `kifunet gtp --model FILE.onnx` plays it without JAX")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="training run directory (its config.json and checkpoints), its "
                   "checkpoints directory or one step's directory")
    p.add_argument("--out", required=True, metavar="FILE.onnx", type=option_types.new_file,
                   help="the ONNX file to write (replaced if it exists)")
    p.add_argument("--step", type=int, help="this checkpoint step instead of the newest")
    unsealed.add_option(p)
    p.add_argument("--features", help="feature set, only for a run that records none (as for `kifunet gtp`)")
    p.add_argument("--board-size", type=option_types.board_size, help="board size, only for a run that records none")
    p.add_argument("--profile", default=None, metavar="KEY=VALUE,...", type=option_types.profile,
                   help="for a net with a profile input: the default game profile recorded in the file's metadata "
                        "(rank=7d,year=2010,source=kgs,...; players use it unless told another)")


def _check_inputs(args) -> None:
    import importlib.util
    import os

    from kifunet.train.nets import resolve_checkpoint

    workdir, target = resolve_checkpoint(args.run, args.step)  # FileNotFoundError: no run, no such step
    if os.path.abspath(target) == workdir:
        ck = os.path.join(workdir, "checkpoints")
        if not os.path.isdir(ck) or not any(d.isdigit() for d in os.listdir(ck)):
            raise CommandError(f"{workdir}: no checkpoint (nothing under {ck}); train the run first")
    if os.path.isdir(args.out):
        raise CommandError(f"{args.out}: is a directory; name the .onnx file to write")
    missing = [m for m in ("jax2onnx", "onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        raise CommandError(f"exporting needs {', '.join(missing)}: pip install 'kifunet[export]'")


def run(args) -> int:
    unsealed.apply(args)  # --allow-unsealed: for the checkpoint loader
    import contextlib
    import json
    import sys

    _check_inputs(args)
    from kifunet.play import export_onnx

    with contextlib.redirect_stdout(sys.stderr):  # JAX's and the converter's notes are not the result
        res = export_onnx.export_run(args.run, args.out, step=args.step, feature_set=args.features,
                                     board_size=args.board_size, profile=args.profile)
    m = res.metadata
    n = m["board_size"]
    step = f" step {m['step']}" if m.get("step") else ""
    data = json.loads(m.get("training_data", "{}")).get("dataset") or "?"
    print(f"wrote {res.path} ({res.bytes / 1e6:.2f} MB) in {res.seconds:.1f} s: {m['model']} from "
          f"{m.get('run', '?')}{step}, trained on {data}")
    print(f"  inputs: planes float32 [B, {n}, {n}, {len(json.loads(m['plane_names']))}] ({m['feature_set']} "
          f"features){''.join(f', {i} int32 [B]' for i in res.inputs[1:] if i != 'profile')}; "
          f"rank via {m['rank_input']}")
    if m.get("profile_input") == "true":
        print(f"  profile: input float32 [B, 46] ({m['profile_encoding']}); default "
              f"{m['profile'] or 'all unknown' if 'profile' in m else 'none recorded (all unknown)'}")
    print(f"  outputs: logits float32 [B, {int(n) ** 2 + 1}] (pass last; has pass: {m['has_pass']})"
          + (", value float32 [B]" if "value" in res.outputs else ", no value head")
          + (f", ownership float32 [B, {n}, {n}]" if "ownership" in res.outputs else "")
          + (", score float32 [B]" if "score" in res.outputs else ""))
    print(f"  onnxruntime vs JAX: max |logit difference| {res.max_abs_logit_diff:.2g} on "
          f"{export_onnx.CHECK_POSITIONS} random positions")
    print(f"  play it: kifunet gtp --model {res.path}")
    return 0
