"""numba's on-disk cache, keyed by the kernels' own source.

numba invalidates a cached function when *its* file changes, but not when a function it calls from another
file does: after an edit (or an upgrade) to ``board.py``, a cached ``analysis.py`` kernel would keep running the
old board code. So every kernel module imports ``njit`` from here, which first points numba's cache at a folder
named after a hash of all kernel sources (``~/.cache/kifunet/numba/<hash>``, or ``$KIFUNET_CACHE_DIR``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit  # noqa: F401  (re-exported for the kernel modules)

KERNEL_MODULES = ("board.py", "ladders.py", "analysis.py", "features.py", "_jit.py")


def _cache_dir() -> Path:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in KERNEL_MODULES:
        h.update((here / name).read_bytes())
    root = Path(os.environ.get("KIFUNET_CACHE_DIR", Path.home() / ".cache" / "kifunet"))
    return root / "numba" / f"{numba.__version__}-{h.hexdigest()[:16]}"


CACHE_DIR = _cache_dir()
numba.config.CACHE_DIR = str(CACHE_DIR)
