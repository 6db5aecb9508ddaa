"""The ``kifunet`` command line: one entry point, one module per subcommand.

Each subcommand lives in ``kifunet/commands/<name>.py`` and defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``; a module that sets ``ACCEPTS_EXTRA_ARGS = True`` receives
arguments argparse does not know (such as ``--config.key=value``) in ``args.extra``. Modules are imported only
when their command runs. :func:`main` prints bad input (:mod:`kifunet.errors`), raised by a command or by an
option's converter, as ``kifunet CMD: error: MESSAGE`` on stderr and returns 2; a command run by another one
(``quickstart`` runs ``build``, ``train`` and ``eval`` through :func:`main`) lets the error through, so it is
reported once, under the command the user typed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import shutil
import sys
import textwrap

from kifunet import __version__, errors

# The top-level help lists the commands in these sections, in this order. Name -> module under kifunet.commands.
SECTIONS = (
    ("start here", ("quickstart",)),
    ("datasets", ("build", "tfds", "stats", "inspect", "features", "verify")),
    ("training and results", ("train", "compile", "eval", "tables", "show")),
    ("playing", ("gtp", "match", "export")),
)
COMMANDS = tuple(name for _, names in SECTIONS for name in names)

DESCRIPTION = """\
Predict the next move of strong Go players: turn SGF game records into datasets of positions, train policy
networks on them, measure them against the published results, and play them against other Go programs."""

EPILOG = """\
getting started (from a checkout):
  python -m pip install -e ".[dev]" && kifunet quickstart
      install, then build a dataset from the bundled sample games, train a small net for 3 minutes
      and evaluate it: about 4 minutes on 2 CPU cores (`kifunet quickstart --sgf PATH...`: your games)
  python -m pytest -q
      the test suite

the usual path:
  kifunet build GAMES... --out DATA
  kifunet train --config train/configs/cpu_small.py --workdir RUN --config.dataset=DATA
  kifunet eval --checkpoint RUN --data DATA --split test
  kifunet tables RUN
  kifunet gtp --checkpoint RUN

`kifunet COMMAND --help` shows a command's options. Bad input is reported as
`kifunet COMMAND: error: ...` on stderr, with exit status 2."""

_depth = 0  # nesting of main(): quickstart runs other commands through it


def _available():
    out = {}
    for name in COMMANDS:
        try:
            out[name] = importlib.import_module(f"kifunet.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"kifunet.commands.{name}":
                raise
    return out


def commands_text(modules) -> str:
    """The command list of the top-level help: each section, each command with its one-line ``HELP``."""
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 110)) - 2
    lines = []
    for title, names in SECTIONS:
        present = [n for n in names if n in modules]
        if not present:
            continue
        lines.append(f"{title}:")
        for name in present:
            wrapped = textwrap.wrap(modules[name].HELP, width - 16) or [""]
            lines.append(f"  {name:<12s}  {wrapped[0]}")
            lines += [" " * 16 + w for w in wrapped[1:]]
        lines.append("")
    return "\n".join(lines)


def build_parser(modules=None) -> argparse.ArgumentParser:
    modules = modules if modules is not None else _available()
    parser = argparse.ArgumentParser(prog="kifunet", usage="kifunet [-h] [--version] COMMAND [ARGS...]",
                                     description=DESCRIPTION, epilog=commands_text(modules) + "\n" + EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kifunet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help=argparse.SUPPRESS, prog="kifunet")
    for name, mod in modules.items():
        p = sub.add_parser(name, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _module=mod)
    return parser


def console_main() -> int:
    """The ``kifunet`` program: :func:`main` on ``sys.argv``, ending quietly when its output pipe closes.

    When the reader of standard output goes away (``kifunet ... | head``) the program stops without a traceback
    (status 0). SIGPIPE stays ignored (``build``'s own pipes must fail as exceptions, not kill the process), so a
    ``BrokenPipeError`` from any other pipe keeps its traceback.
    """
    try:
        status = main()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # Python flushes stdout again at exit: point it at /dev/null so that flush has nowhere to fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (``poll`` reports POLLERR on it)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(ev & select.POLLERR for _, ev in poller.poll(0))


def main(argv=None) -> int:
    global _depth
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args, extra = parser.parse_known_args(argv)
    except errors.UserError as e:  # an option's converter refused its value (kifunet.commands.option_types)
        if _depth:
            raise
        return errors.report(next((a for a in argv if a in COMMANDS), ""), e)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if extra and not getattr(args._module, "ACCEPTS_EXTRA_ARGS", False):
        print(f"kifunet {args.command}: error: unrecognized arguments: {' '.join(extra)} (`kifunet {args.command} "
              f"--help` lists its options)", file=sys.stderr)
        return 2
    args.extra = extra
    _depth += 1
    try:
        return int(args._run(args) or 0)
    except Exception as e:  # noqa: BLE001 -- bad input is reported; anything else keeps its traceback
        if _depth > 1 or not errors.is_user_error(e):
            raise
        return errors.report(args.command, e)
    finally:
        _depth -= 1


if __name__ == "__main__":  # python -m kifunet.cli: run the one kifunet.cli module the commands import too
    from kifunet import cli

    sys.exit(cli.console_main())
