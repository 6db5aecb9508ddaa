"""The Apache Beam environment of the tests: ``.ci-beam-venv/`` in the repository root (git-ignored).

apache-beam 2.x pins protobuf < 7 (and pillow < 13, pyarrow < 26), while the project's environment has protobuf 7,
so the Beam build of ``go_moves`` is tested in an environment of its own. It is a venv that sees the project's
environment (``--system-site-packages``; where the project's Python is itself a venv, :func:`see_this_environment`)
and holds only what apache-beam needs on top: the Beam venv's site-packages come first on ``sys.path``, so its
protobuf 6, pillow 12 and pyarrow 25 shadow the project's and nothing of the project's environment is changed or
reinstalled (kifunet, JAX, tensorflow-datasets... are the project's). The requirements are the ``beam`` extra of
``pyproject.toml`` (``kifunet[...]`` in it expanded).

``python tests/beam_env.py`` makes it (``.ci/run`` does, before the tests) or brings it up to date, and prints its
Python: it is reused when its stamp (a hash of the requirements, the Python version and the name and version of
every distribution of the project's environment) matches, reinstalled into (``pip install``) when the stamp
differs, and made afresh when its Python is gone or another version, or the project's Python is another.
``tests/test_tfds_go_moves.py::test_beam_tests_pass_in_the_beam_environment`` runs the Beam tests with its Python
(``--path`` prints it).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("KIFUNET_BEAM_VENV", REPO / ".ci-beam-venv"))
STAMP = "kifunet-beam-env.json"
#: pip flags: no .pyc of all of apache-beam at install (its modules compile on import; about 8 s saved), wheels
#: before newer source releases (no compiling)
PIP_FLAGS = ["-q", "--no-compile", "--prefer-binary", "--disable-pip-version-check", "--progress-bar", "off"]


def python(venv: Path = VENV) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def requirements() -> list[str]:
    """The ``beam`` extra of pyproject.toml, with ``kifunet[x,...]`` replaced by the requirements of those extras."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    out, todo, seen = [], ["beam"], set()
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        for req in extras[name]:
            m = re.fullmatch(r"kifunet\[([^\]]+)\]", req.replace(" ", ""))
            if m:
                todo += m.group(1).split(",")
            else:
                out.append(req)
    return out


def stamp(reqs: list[str]) -> dict:
    """What the venv was made from: a change of any of it reinstalls into it."""
    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()
                    if d.metadata["Name"]})
    return {"requirements": reqs, "python": sys.version, "executable": sys.executable,
            "environment": hashlib.sha256("\n".join(dists).encode()).hexdigest()}


def site_dirs() -> list[str]:
    """The site-packages directories this Python imports from, in ``sys.path`` order."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def see_this_environment(venv: Path) -> bool:
    """Where this Python is itself a venv, let the venv at ``venv`` import this Python's packages after its own.

    ``python -m venv --system-site-packages`` from a venv's Python sees the *base* Python's site-packages, not the
    venv's (``ModuleNotFoundError`` for the project's dependencies): so ``outer_env.pth`` in ``venv``'s
    site-packages adds each of :func:`site_dirs` with ``site.addsitedir``, after the venv's own, and their ``.pth``
    files run too (an editable ``kifunet`` is one). The one home of this; the Beam venv and the wheel test's venv use
    it. Returns whether it wrote the file (False: this Python is no venv, nothing to do)."""
    if sys.prefix == sys.base_prefix:
        return False
    purelib = _run([python(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   capture_output=True, text=True, check=True).stdout.strip()
    adds = "; ".join(f"site.addsitedir({d!r})" for d in site_dirs())
    Path(purelib, "outer_env.pth").write_text(f"import site; {adds}\n")
    return True


def _run(args: list, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], env=env, **kw)


def _venv_python_ok(venv: Path) -> bool:
    py = python(venv)
    if not py.exists():
        return False
    p = _run([py, "-c", "import sys; print(sys.version)"], capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.strip() == sys.version.strip()


def create(venv: Path = VENV, *, quiet: bool = False) -> Path:
    """Make or update the Beam venv; return its Python. Raises ``RuntimeError`` when pip fails."""
    reqs = requirements()
    want = stamp(reqs)
    stamp_file = venv / STAMP
    say = (lambda *a: None) if quiet else (lambda *a: print("beam_env:", *a, file=sys.stderr, flush=True))
    try:
        had = json.loads(stamp_file.read_text()) if stamp_file.exists() else None
    except ValueError:
        had = None
    if had is not None and _venv_python_ok(venv) and had.get("executable") == want["executable"]:
        if had == want:
            say(f"{venv} is up to date")
            return python(venv)
        say(f"{venv}: the requirements or the project's environment changed: pip install into it")
    elif venv.exists() and (not _venv_python_ok(venv) or (had or {}).get("executable") != want["executable"]):
        # another project Python (a venv now, or none): how the venv sees the project's packages differs
        say(f"{venv}: its Python is gone, another version, or made from another Python: made afresh")
        shutil.rmtree(venv)
    if not venv.exists():
        say(f"making {venv} (a venv over the project's environment) for {' '.join(reqs)}")
        # no pip of its own: the project's pip (seen through the project's site-packages) installs into the venv
        outer_venv = sys.prefix != sys.base_prefix
        _run([sys.executable, "-m", "venv", "--without-pip", *([] if outer_venv else ["--system-site-packages"]),
              venv], check=True)
        see_this_environment(venv)  # the project's Python is a venv: its site-packages, after the Beam venv's own
    stamp_file.unlink(missing_ok=True)
    p = _run([python(venv), "-m", "pip", "install", *PIP_FLAGS, *reqs])
    if p.returncode:
        raise RuntimeError(f"pip install {' '.join(reqs)} into {venv} failed (exit {p.returncode})")
    # the Beam venv's protobuf must shadow the project's (protobuf 7): checked without importing anything heavy
    check = ("import importlib.util, sys; s = importlib.util.find_spec('google.protobuf'); "
             "b = importlib.util.find_spec('apache_beam'); "
             "sys.exit(0 if s and b and s.origin.startswith(sys.prefix) else 1)")
    if _run([python(venv), "-c", check]).returncode:
        raise RuntimeError(f"{venv}: apache_beam missing or protobuf not the venv's own")
    stamp_file.write_text(json.dumps(want, indent=1) + "\n")
    say(f"{venv} ready")
    return python(venv)


def existing_python(venv: Path = VENV) -> Path | None:
    """The Beam venv's Python if the venv is ready (made and stamped), else None. Does not check the stamp's
    contents: ``create`` (run by ``.ci/run``) brings it up to date."""
    py = python(venv)
    return py if py.exists() and (venv / STAMP).exists() else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", type=Path, default=VENV, help=f"where (default {VENV}; or $KIFUNET_BEAM_VENV)")
    p.add_argument("--path", action="store_true", help="only print its Python if it is ready (exit 1 if not)")
    args = p.parse_args(argv)
    if args.path:
        py = existing_python(args.venv)
        if py:
            print(py)
        return 0 if py else 1
    try:
        print(create(args.venv))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"beam_env: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
