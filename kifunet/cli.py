"""The ``kifunet`` command line: one entry point, one module per subcommand.

Each subcommand lives in ``kifunet/commands/<name>.py`` and defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``; a module that sets ``ACCEPTS_EXTRA_ARGS = True`` receives
arguments argparse does not know (such as ``--config.key=value``) in ``args.extra``. Modules are imported only when their command runs,
so ``kifunet --help`` stays fast and ``kifunet build`` never imports JAX.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

# Order shown in --help. Name -> module under kifunet.commands.
COMMANDS = ("quickstart", "build", "tfds", "stats", "inspect", "features", "train", "eval", "tables", "show",
            "gtp", "match")


def _available():
    out = {}
    for name in COMMANDS:
        try:
            out[name] = importlib.import_module(f"kifunet.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"kifunet.commands.{name}":
                raise
    return out


def build_parser(modules=None) -> argparse.ArgumentParser:
    modules = modules if modules is not None else _available()
    parser = argparse.ArgumentParser(prog="kifunet", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in modules.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _module=mod)
    return parser


def main(argv=None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `kifunet ... | head` ends quietly, like other Unix tools
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if extra and not getattr(args._module, "ACCEPTS_EXTRA_ARGS", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
