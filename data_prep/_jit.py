"""numba's on-disk cache, keyed by the kernels' own source.

numba invalidates a cached function when *its* file changes, but not when a function it calls from another
file does: after an edit (or an upgrade) to ``rules/board.py``, a cached ``rules/analysis.py`` kernel would keep running
the old board code. So every kernel module imports ``njit`` from here, which first points numba's cache at a folder
named after a hash of all kernel sources (``~/.cache/kifunet/numba/<hash>``, or ``$KIFUNET_CACHE_DIR``).

Compiling every kernel takes about 30 s, once per source hash; later processes load them in about a second.
:func:`kernels_cached` tells whether this hash's kernels are on disk, and :func:`announce_compile` (called by
``kifunet build``, ``features``, ``show`` and ``gtp`` before their first kernel use) says so on stderr when they
are not, instead of leaving a progress bar at 0% for half a minute.
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
    """Whether the compiled kernels of this source hash are on disk for this copy of the code: the index
    numba writes for :data:`ENTRY_KERNEL`, in the folder numba's cache locator uses for this source folder
    (``<folder name>_<sha1 of its absolute path>``)."""
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
