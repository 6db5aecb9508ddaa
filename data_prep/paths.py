"""Where the installed package finds files: the sample corpus it ships, and the user's run directories.

The sample corpus and the default net (:data:`DEFAULT_NET`, :func:`default_net`) are package data
(``kifunet.samples``, ``kifunet.pretrained``) found with :mod:`importlib.resources`, so a wheel install has them
too. Runs live in ``runs/`` of the current working directory, else of the nearest parent directory that has one (a
notebook started in ``notebooks/`` finds the checkout's), else ``./runs``; never the source tree's location.
"""

from __future__ import annotations

from pathlib import Path


def samples_dir() -> Path:
    """The sample corpus folder (holds ``README.md`` and ``gnugo/``)."""
    from importlib import resources

    try:
        return Path(str(resources.files("kifunet.samples")))
    except ModuleNotFoundError:
        # an editable install made before pyproject.toml mapped kifunet.samples (its import finder predates the
        # mapping; `pip install -e .` again refreshes it): the checkout's samples/ beside the package
        import kifunet

        return Path(kifunet.__file__).resolve().parents[1] / "samples"


def sample_games() -> Path:
    """The sample games' folder, ``gnugo/`` of :func:`samples_dir` (only ``.sgf`` files: build from it)."""
    return samples_dir() / "gnugo"


#: the run under ``pretrained/`` that kifunet reaches for when no net is named (one place to change it)
DEFAULT_NET = "kgs_cpu_default_ownership"


def default_net(*, must_exist: bool = True) -> Path:
    """The default net's run directory (``pretrained/DEFAULT_NET``, found as package data like the samples);
    ``must_exist=False`` only locates it (no error when an install lacks it)."""
    from importlib import resources

    try:
        root = Path(str(resources.files("kifunet.pretrained")))
    except ModuleNotFoundError:  # an editable install made before the mapping existed (see samples_dir)
        import kifunet

        root = Path(kifunet.__file__).resolve().parents[1] / "pretrained"
    net = root / DEFAULT_NET
    if must_exist and not (net / "config.json").is_file():
        raise FileNotFoundError(f"the default net {net} is missing (a damaged install?); name a run with "
                                "--checkpoint RUN")
    return net


def runs_dir(start: str | Path | None = None) -> Path:
    """``runs/`` of ``start`` (default: the current directory) or of its nearest parent that has one; else
    ``start/runs`` (which may not exist yet)."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "runs").is_dir():
            return d / "runs"
    return here / "runs"


__all__ = ["DEFAULT_NET", "default_net", "runs_dir", "sample_games", "samples_dir"]

