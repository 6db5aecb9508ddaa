"""numba's on-disk cache, keyed by a hash of every kernel module's source.

numba invalidates a cached function when its own file changes, not when a callee in another file does, so every
kernel module imports ``njit`` from here, which points numba's cache at ``~/.cache/kifunet/numba/<hash>`` (or
``$KIFUNET_CACHE_DIR``). :func:`kernels_cached` tells whether this hash's kernels are on disk;
:func:`announce_compile` says on stderr that they are being compiled when they are not (docs/positions.md).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numba
from numba import njit  # noqa: F401  (re-exported for the kernel modules)

#: the kernel sources, relative to this folder (``data_prep/``)
KERNEL_MODULES = ("rules/board.py", "rules/ladders.py", "rules/analysis.py", "planes/features.py", "_jit.py")


def _cache_dir() -> Path:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in KERNEL_MODULES:
        h.update((here / name).read_bytes())
    root = Path(os.environ.get("KIFUNET_CACHE_DIR", Path.home() / ".cache" / "kifunet"))
    return root / "numba" / f"{numba.__version__}-{h.hexdigest()[:16]}"


CACHE_DIR = _cache_dir()
numba.config.CACHE_DIR = str(CACHE_DIR)

#: the kernel whose cache entry is written last when everything compiles (every feature set replays through it)
ENTRY_KERNEL = "analysis.replay_game"
COMPILE_MESSAGE = "compiling the rules engine (once, about 30 s)..."
_announced = False


def kernels_cached() -> bool:
    """Whether this source hash's compiled kernels are on disk for this copy of the code (numba's index for
    :data:`ENTRY_KERNEL`)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")  # where ENTRY_KERNEL's source is
    sub = "_".join([os.path.basename(here), hashlib.sha1(here.encode()).hexdigest()])
    return any((CACHE_DIR / sub).glob(f"{ENTRY_KERNEL}-*.nbi"))


def announce_compile(file=None) -> bool:
    """Print :data:`COMPILE_MESSAGE` on stderr (or ``file``) if the kernels still have to be compiled; at most
    once per process. Returns whether it printed."""
    global _announced
    if _announced or kernels_cached():
        return False
    _announced = True
    print(COMPILE_MESSAGE, file=file if file is not None else sys.stderr, flush=True)
    return True
