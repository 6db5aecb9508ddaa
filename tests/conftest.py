"""Shared test fixtures and the one switch for what a test may skip.

``require(ok, what, hint)`` is the only way a test says "I need X": where X is absent it *skips* locally (a fresh
clone has no ``../shared`` beside it, a laptop may lack GNU Go) and *fails* in CI (``CI`` set to ``true``/``1``,
which ``.ci/run`` exports), because CI provides everything and a skip there would hide a missing tool. On top of
that, in CI any skip at all -- a ``pytest.skip``/``importorskip`` written without ``require`` -- is reported as a
failure, except tests marked ``@pytest.mark.manual("how to run it")`` (the Beam build: its own environment).

Helpers: :func:`require`, :func:`require_module`, :func:`require_gnugo`, :func:`require_path`,
:func:`load_script` (a ``scripts/*.py`` file as a module); fixtures
``kgs_dir`` and ``kgs_2017_01`` (the real KGS archives in ``../shared/data/kgs``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

REPO = Path(__file__).resolve().parents[1]
KGS_DIR = REPO.parent / "shared" / "data" / "kgs"
KGS_2017_01 = KGS_DIR / "KGS-2017_01-19-733-.tar.gz"
KGS_2015 = KGS_DIR / "KGS-2015-19-8133-.tar.gz"


def load_script(name: str):
    """``scripts/NAME.py`` imported as the module ``NAME`` (once; later calls return the same module)."""
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def in_ci() -> bool:
    """The CI switch: the ``CI`` environment variable is ``true``/``1``/``yes`` (``.ci/run`` exports it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(ok: bool, what: str, hint: str = "") -> None:
    """Go on if ``ok``; else skip (locally) or fail (in CI) saying that ``what`` is missing and how to get it."""
    if ok:
        return
    msg = f"{what} is not available" + (f" ({hint})" if hint else "")
    if in_ci():
        pytest.fail(f"CI=true and {msg}: CI must provide it, so this is a failure, not a skip", pytrace=False)
    pytest.skip(msg, allow_module_level=True)


def require_module(name: str, hint: str = ""):
    """``importlib.import_module(name)``, or :func:`require` fails/skips. Works at module level too."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        why = str(e)
    require(False, f"the Python module {name!r}", hint or f"pip install -e '.[dev]'; {why}")


def find_gnugo() -> str | None:
    """GNU Go's path (the PATH, else Debian's /usr/games), or None."""
    return shutil.which("gnugo") or shutil.which("/usr/games/gnugo")


def require_gnugo() -> str:
    path = find_gnugo()
    require(path is not None, "GNU Go", "Debian: apt-get install gnugo")
    return path


def require_path(path: Path, what: str) -> Path:
    """A file or folder the test reads (the real KGS archives: ``../shared`` is absent in a fresh clone)."""
    require(Path(path).exists(), f"{what} at {path}", "../shared/data/kgs is beside the clone in CI, not in a fresh "
            "clone")
    return Path(path)


# ------------------------------------------------------------------------------------------------------------
# Hypothesis profiles (tests/test_fuzz.py): ``ci``, the default, runs a bounded number of examples, derandomized
# (the same ones every run, so CI cannot flake) and without an example database; ``dev`` runs ten times as many
# random examples and keeps failing ones in ~/.cache/kifunet/hypothesis:
# ``HYPOTHESIS_PROFILE=dev python -m pytest tests/test_fuzz.py`` (or ``--hypothesis-profile=dev``).

try:
    from hypothesis import settings as _hypothesis_settings
    from hypothesis.database import DirectoryBasedExampleDatabase as _HypothesisDatabase
except ImportError:  # the test extra is missing: tests/test_fuzz.py says so through require_module
    pass
else:
    _hypothesis_settings.register_profile("ci", max_examples=100, derandomize=True, database=None,
                                          print_blob=True)
    _hypothesis_settings.register_profile(
        "dev", max_examples=1000, print_blob=True,
        database=_HypothesisDatabase(os.path.join(os.path.expanduser("~"), ".cache", "kifunet", "hypothesis")))
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def kgs_2017_01() -> Path:
    return require_path(KGS_2017_01, "the real KGS archive")


@pytest.fixture
def kgs_dir() -> Path:
    return require_path(KGS_DIR, "the real KGS archives")


# ------------------------------------------------------------------------------------------------------------
# the longest files first: with pytest-xdist's --dist loadfile (pyproject.toml) a worker takes whole files in
# collection order (--no-loadscope-reorder: xdist would otherwise order the files by their number of tests), so a
# long file collected last keeps one worker busy while the others have nothing left to do

#: the files whose tests take longest in all (a CI run's time per file, summed over its tests), longest first
LONG_FILES = ("test_build.py", "test_pretrained.py", "test_aot.py", "test_train.py", "test_replay.py",
              "test_bench_device.py", "test_build_faults.py", "test_models.py", "test_bucket_workdir.py",
              "test_tfds_go_moves.py", "test_models_forward.py", "test_ownership_targets.py", "test_dataset_verify.py",
              "test_cli_errors.py", "test_docs_site.py", "test_wheel_install.py", "test_play_profile.py",
              "test_checkpoint_verify.py", "test_no_process_left.py", "test_preemption.py", "test_jit.py",
              "test_tfds_faults.py", "test_models_aux_heads.py", "test_notebooks.py", "test_train_loop.py",
              "test_eval_runs.py", "test_policy.py", "test_match.py", "test_ladders.py", "test_gtp_start.py")


def pytest_xdist_auto_num_workers(config):
    """``-n logical`` (pyproject.toml): one worker more than the logical CPUs, since the tests spend part of their
    time waiting on the processes they start (builds, training runs, GTP engines); --maxprocesses caps it. (Two more
    kept both CPUs 96% busy instead of 80%, but spent 4% more CPU time and took longer: docs/tests.md.)"""
    import os

    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))  # stable: each file keeps its order

# ------------------------------------------------------------------------------------------------------------
# the rules engine compiled once before the tests start: on a cold numba cache (a fresh clone) each worker, and each
# `kifunet build` started before the cache is written, would compile the same kernels (about 22 CPU-seconds each)

_WARM: dict = {}
#: a run of fewer tests does not wait for the compilation (it is stopped)
WARM_MIN_TESTS = 1000


def pytest_sessionstart(session):
    """In the main process (pytest-xdist's controller, or a run without workers), when the kernels are not cached:
    compile them in the background with a `kifunet build` of one sample game, while the workers collect."""
    if hasattr(session.config, "workerinput"):
        return
    import subprocess
    import sys
    import tempfile

    from kifunet.data_prep import _jit

    if _jit.kernels_cached():
        return
    out = tempfile.mkdtemp(prefix="kifunet-warm-")
    cmd = [sys.executable, "-m", "kifunet.cli", "build", str(REPO / "samples" / "gnugo" / "gnugo-0000.sgf"),
           "--out", os.path.join(out, "ds"), "--workers", "0", "--no-progress"]
    _WARM.update(dir=out, proc=subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def _warm_done(tests: int) -> None:
    """Wait for the compilation (or stop it, for a run of fewer than :data:`WARM_MIN_TESTS` tests)."""
    proc = _WARM.pop("proc", None)
    if proc is None:
        return
    if tests < WARM_MIN_TESTS:
        proc.kill()
    proc.wait()
    shutil.rmtree(_WARM.pop("dir"), ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    _warm_done(len(ids))  # in the controller, before it hands out the first tests


def pytest_collection_finish(session):
    if not hasattr(session.config, "workerinput"):  # a run without workers
        _warm_done(len(session.items))


def pytest_sessionfinish(session):
    _warm_done(0)  # a run stopped before collection finished

# ------------------------------------------------------------------------------------------------------------
# in CI, nothing is skipped unless it is marked manual


def pytest_configure(config):
    config.addinivalue_line("markers", "manual(how): not run in CI (the reason says how to run it); its skip is "
                                       "allowed in CI")


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    return str(lr[2] if isinstance(lr, tuple) and len(lr) == 3 else lr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if in_ci() and rep.skipped and not hasattr(rep, "wasxfail") and item.get_closest_marker("manual") is None:
        rep.outcome = "failed"
        rep.longrepr = (f"skipped in CI (CI=true), where nothing may be skipped: {_skip_reason(rep)}\n"
                        "(use tests/conftest.py require() for a tool CI must provide, or mark a test that CI "
                        "cannot run @pytest.mark.manual)")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if in_ci() and rep.skipped:
        rep.outcome = "failed"
        rep.longrepr = f"{collector.nodeid} skipped at collection in CI (CI=true): {_skip_reason(rep)}"
