"""Training run directories, as eval and the notebooks see them: which runs to study, where their figures go, and
one run as a :class:`kifunet.eval.evaluate.Predictor` (:func:`load_run`).

A run directory (the ``--workdir`` of ``kifunet train``) holds ``config.json``, orbax checkpoints, and the
JSON-lines metrics ``metrics_train.jsonl`` / ``metrics_eval.jsonl``; ``kifunet eval`` adds ``eval/*.json``.
:func:`run_dirs_from_env` reads ``KIFUNET_RUN`` (``os.pathsep``-separated; unset or empty: every run under
``runs/`` at any depth, newest first (:func:`find_run_dirs`), then the default net); :func:`net_from_env` is the
first run it names, else the first of these with a checkpoint; ``KIFUNET_FIGURES`` is where notebooks write their
PNGs. The defaults: docs/evaluation.md ("Notebooks").
"""

from __future__ import annotations

import os

from kifunet.data_prep import paths
from kifunet.train.nets import is_run_dir, load_net


#: files whose times say when a run last changed (with the run directory itself)
_ACTIVITY = ("config.json", "metrics_train.jsonl", "metrics_eval.jsonl", "checkpoints", "eval")


def run_mtime(path: str) -> float:
    """When the run last changed: the newest modification time of its directory, config, metrics, checkpoints
    folder and eval folder."""
    times = [os.path.getmtime(path)]
    for name in _ACTIVITY:
        try:
            times.append(os.path.getmtime(os.path.join(path, name)))
        except OSError:
            pass
    return max(times)


def find_run_dirs(root: str | os.PathLike) -> list[str]:
    """Every run directory (:func:`is_run_dir`) below ``root``, at any depth, newest first (:func:`run_mtime`).

    A run's own folders (checkpoints, eval, figures...) are not searched, nor hidden folders."""
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        if dirpath != os.fspath(root) and is_run_dir(dirpath):
            found.append(dirpath)
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found, key=lambda d: (-run_mtime(d), d))


def run_dirs_from_env() -> list[str]:
    """Run directories named by ``KIFUNET_RUN``, else every run under ``runs/``, at any depth (newest first),
    then the default net."""
    named = _named_runs()
    if named:
        return named
    return [*find_run_dirs(paths.runs_dir()), str(paths.default_net())]


def net_from_env() -> str:
    """The one net to study: the first run ``KIFUNET_RUN`` names, else the first run of :func:`run_dirs_from_env`
    that has a checkpoint (the newest under ``runs/``: after ``kifunet quickstart``, ``runs/quickstart/run``),
    else the default net."""
    named = _named_runs()
    if named:
        return named[0]
    from kifunet.train.nets import step_dir

    for run in find_run_dirs(paths.runs_dir()):
        try:
            step_dir(run)
        except (FileNotFoundError, ValueError):
            continue  # a run stopped before its first checkpoint
        return run
    return str(paths.default_net())


def _named_runs() -> list[str]:
    env = os.environ.get("KIFUNET_RUN", "").strip()
    dirs = [d for d in env.split(os.pathsep) if d]
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        raise FileNotFoundError(f"KIFUNET_RUN names missing directories: {', '.join(missing)}")
    return dirs


def figures_dir(run_dirs: list[str]) -> str:
    out = os.environ.get("KIFUNET_FIGURES")
    if not out:
        first = os.path.realpath(run_dirs[0])
        default = first == os.path.realpath(paths.default_net(must_exist=False))
        out = str(paths.runs_dir() / "figures") if default else os.path.join(first, "figures")
    os.makedirs(out, exist_ok=True)
    return out


def sample_sgf() -> str:
    """The first game of the project's sample corpus (the notebooks' default position source)."""
    return str(paths.sample_games() / "gnugo-0000.sgf")


def load_run(path: str, *, dataset: str | None = None, step: int | None = None):
    """A :class:`kifunet.eval.evaluate.Predictor` of :func:`kifunet.train.nets.load_net` (computing in the trained
    dtype)."""
    from kifunet.eval.evaluate import Predictor

    net = load_net(path, step=step, dataset=dataset)
    return Predictor(net.model, net.feature_set, info=net.info)
