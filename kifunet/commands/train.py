"""``kifunet train --config FILE --workdir DIR [--config.key=value ...]``: train a policy net.

Runs :func:`kifunet.train.train.train_and_evaluate`, on one device, all devices of one machine, or every host of a
multi-host job. Rerunning it on the same ``--workdir`` resumes from the newest checkpoint and says so on its first
line; ``config.json`` is written once the first checkpoint is on disk. Exit statuses: :data:`EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from kifunet.errors import CommandError

#: exit status -> meaning (kifunet.train.preemption: why 143 and 130)
EXIT_STATUSES = (
    (0, "trained to train_positions or to time_limit_s (checkpoint saved)"),
    (2, "bad input: config, dataset (another than the run's, on resume), a workdir in use by another trainer, a "
        "batch that cannot fit in memory, a full or read-only disk (one line naming the path)"),
    (3, "the training loss became NaN or infinite (the last checkpoint precedes it)"),
    (143, "stopped by SIGTERM after the step in progress, with a checkpoint; rerun the same command to resume"),
    (130, "stopped by SIGINT (Ctrl-C): the same"),
    ("killed", "a second SIGTERM or SIGINT while stopping ends the process at once, by that signal (a shell shows "
               "143 or 130, Python's subprocess -15 or -2); no new checkpoint"),
)

HELP = "train a policy net from a built dataset (ml_collections config; resumes from the workdir)"

EPILOG = """\
config overrides: any field of the config file, e.g.
  --config.dataset=DIR --config.batch_size=512 --config.schedule.lr=0.05 --config.model.dtype=bfloat16
  --config.init_from=OTHER_WORKDIR (weights only) --config.time_limit_s=3600
configs (a name, or a file defining get_config(); NAME:ARG / FILE:ARG pass ARG to it):
{configs}
`kifunet train --config NAME --workdir DIR --print-config` shows the resolved config.
datasets: a `kifunet build` directory, or a TFDS go_moves dataset: --config.dataset=tfds:DIR (its
dataset_info.json directory) or tfds:go_moves/CONFIG@DATA_DIR (data_prep/datasets/dataset.py).
exit status:
""" + "\n".join(f"  {code:>6}  {what}" for code, what in EXIT_STATUSES) + "\n"


def config_dir() -> Path:
    """The folder of the shipped training configs (``train/configs/``; package ``kifunet.train.configs``), found
    without importing it (every command's parser is built at start-up)."""
    import importlib.util

    return Path(importlib.util.find_spec("kifunet.train.configs").submodule_search_locations[0])


def config_names() -> list[str]:
    """The shipped configs' names, read from :func:`config_dir` now (every ``*.py`` but ``__init__``)."""
    return sorted(f.stem for f in config_dir().glob("*.py") if f.stem != "__init__")


def config_file(spec: str) -> str:
    """A ``--config`` value as a file spec: a path (``FILE`` or ``FILE:ARG``: it exists, has a ``/`` or ends in
    ``.py``; the loader names a missing one) as given, a shipped config's name (``NAME`` or ``NAME:ARG``) as its
    file. Anything else is a :class:`CommandError` that lists the names."""
    path, sep, arg = spec.partition(":")
    if os.path.exists(spec) or os.path.exists(path) or os.sep in path or path.endswith(".py"):
        return spec
    named = config_dir() / f"{path}.py"
    if path in config_names():
        return f"{named}{sep}{arg}"
    raise CommandError(f"--config {spec!r}: no such config file, nor a config name ({', '.join(config_names())})")


def workdir_arg(text: str) -> str:
    """``text``: a local directory, or a Cloud Storage URL (``gs://BUCKET/PATH``, written through ``etils.epath``
    and ``gcsfs``: docs/accelerators.md, a TPU VM and a bucket). Another URL scheme, or ``gs://`` without
    ``gcsfs`` installed, is a :class:`CommandError`."""
    from kifunet.data_prep.fileio.atomic import is_url

    if not is_url(text):
        return text
    scheme = text.partition("://")[0]
    if scheme != "gs":
        raise CommandError(f"{text}: a {scheme}:// workdir is not supported (gs:// is); train into a local "
                           f"directory, or mount the store and name the mount point")
    import importlib.util

    if importlib.util.find_spec("gcsfs") is None:
        raise CommandError(f"{text}: a gs:// workdir needs gcsfs: pip install gcsfs (or kifunet[gcs])")
    return text


def _epilog() -> str:
    names = textwrap.fill(", ".join(config_names()), width=110, initial_indent="  ", subsequent_indent="  ")
    return EPILOG.replace("{configs}", names)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, metavar="NAME|FILE[:ARG]",
                   help="a config's name (listed below; train/configs/NAME.py) or a file defining get_config()")
    p.add_argument("--workdir", required=True, metavar="DIR",
                   help="checkpoints, metrics_*.jsonl, tensorboard/, config.json; resumed if it has a checkpoint; "
                        "a local folder or gs://BUCKET/PATH (needs gcsfs)")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.epilog = _epilog()
    p.formatter_class = argparse.RawDescriptionHelpFormatter


ACCEPTS_EXTRA_ARGS = True  # the --config.key=value overrides


def run(args) -> int:
    from kifunet.train import configs

    workdir_arg(args.workdir)
    overrides, rest = configs.parse_overrides(list(getattr(args, "extra", None) or []))
    if rest:
        raise CommandError(f"unrecognized arguments: {' '.join(rest)}")
    cfg = configs.load(config_file(args.config), overrides)  # ConfigError, UnknownName: reported by the CLI
    if args.print_config:
        print(cfg)
        return 0
    # multi-host: join before anything touches a device
    from kifunet.train import parallel

    parallel.use_cpu_devices(cfg.cpu_devices)
    parallel.initialize_distributed()
    from kifunet.train import preemption, train

    try:
        result = train.train_and_evaluate(cfg, args.workdir)
    except train.NonFiniteLoss as e:
        print(f"kifunet train: error: {e}", file=sys.stderr)
        return 3
    except preemption.Preempted as e:  # the checkpoint is on disk, the workers stopped, the metrics flushed
        import jax

        if jax.process_index() == 0:
            print(e.line(), flush=True)
        return e.status
    if "top1" in result:
        print(f"final: step {result['step']:,} ({result['positions']:,} positions): top1 {100 * result['top1']:.2f}% "
              f"top4 {100 * result['top4']:.2f}% nats {result['nats']:.4f} on {int(result['eval_positions']):,} "
              f"evaluation positions")
    return 0
