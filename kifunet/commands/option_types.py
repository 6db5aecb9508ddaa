"""The options several commands share, checked as argparse converters (``add_argument(..., type=...)``).

Each converter returns the text as given (:func:`board_size`: the int) or raises
:class:`kifunet.errors.CommandError` while the command line is parsed, so :func:`kifunet.cli.main` prints one line
and exits 2 before the command runs: :func:`profile` (show, export, gtp, eval), :func:`known_rank` (show),
:func:`rank` (gtp), :func:`as_rank` (eval), :func:`board_size` (export, gtp), :func:`new_file` (export),
:func:`image_file` (show) and :func:`phase_starts` (eval). A text that is no integer (``--board-size x``) is argparse's own error.
"""

from __future__ import annotations

import argparse
import os

from kifunet.errors import CommandError


def profile(text: str) -> str:
    """``--profile``: ``text`` when :func:`kifunet.data_prep.profiles.parse_fields` reads it, else
    ``--profile: MESSAGE`` (its message, without its ``profile:`` prefix)."""
    from kifunet.data_prep import profiles

    try:
        profiles.parse_fields(text)
    except ValueError as e:
        raise CommandError(f"--profile: {str(e).removeprefix('profile: ')}") from None
    return text


def _is_rank(text: str) -> bool:
    from kifunet.data_prep import ranks

    return ranks.is_known(ranks.parse_rank(text))


def known_rank(text: str) -> str:
    """``--rank`` naming a rank; the empty text passes (no rank given)."""
    if text and not _is_rank(text):
        raise CommandError(f"--rank {text!r} is not a rank (e.g. 1d, 9d, 3k)")
    return text


def rank(text: str) -> str:
    """``--rank`` naming a rank, or unknown: ``unknown``, ``?``, ``-`` or nothing."""
    if text.strip() not in ("", "?", "-", "unknown") and not _is_rank(text.strip()):
        raise CommandError(f"--rank {text!r} is not a rank (e.g. 1d, 5d, 9d, 3k, 9p, or unknown)")
    return text


def as_rank(text: str) -> str:
    """``--as-rank`` naming a rank, or ``unknown`` / ``?`` (any case)."""
    if text.strip().lower() not in ("unknown", "?") and not _is_rank(text):
        raise CommandError(f"--as-rank {text!r} is not a rank: give e.g. 1d, 5d, 9d, 3k, 9p or unknown")
    return text


def board_size(text: str) -> int:
    """``--board-size``: an integer in 2..19."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 2 <= n <= 19:
        raise CommandError(f"--board-size must be in 2..19, not {n}")
    return n


def new_file(text: str) -> str:
    """A file to write (``--out``): its folder must exist."""
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise CommandError(f"{text}: the folder {folder} does not exist")
    return text


def image_file(text: str) -> str:
    """An image to write (``--out``): ``.png`` or ``.svg`` (the format), in a folder that exists."""
    if not text.lower().endswith((".png", ".svg")):
        raise CommandError("--out must end in .png or .svg")
    return new_file(text)


def phase_starts(text: str) -> str:
    """``--phase-starts``: whole move numbers separated by commas, starting at 1 and increasing."""
    try:
        phases = [int(x) for x in text.split(",")]
    except ValueError:
        raise CommandError(f"--phase-starts {text!r}: give move numbers separated by commas, e.g. 1,21,51,101"
                           ) from None
    if phases[0] != 1 or any(b <= a for a, b in zip(phases, phases[1:])):
        raise CommandError(f"--phase-starts {text!r}: move numbers must start at 1 and increase")
    return text
