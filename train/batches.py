"""Batches: rows of a window as a device-ready batch (:func:`window_batch`, shapes only: :func:`batch_spec`), and the
checkpointable iterator that cuts them (:class:`BatchIterator`). Planes leave the host as ``uint8``. Windows with
targets (:func:`wants_targets`) add ``ownership``, ``ownership_source`` and ``score``."""

from __future__ import annotations

from typing import Any

import grain
import numpy as np

from kifunet.data_prep import profiles
from kifunet.train.configs import ConfigError

HOST_DTYPES = ("uint8", "float32", "bfloat16")


def _host_cast(planes: np.ndarray, host_dtype: str) -> np.ndarray:
    if host_dtype == "uint8":
        return planes
    if host_dtype == "float32":
        return planes.astype(np.float32)
    import ml_dtypes

    return planes.astype(ml_dtypes.bfloat16)


def window_batch(window: dict, a: int, b: int, host_dtype: str = "uint8") -> dict[str, np.ndarray]:
    """Rows a..b of a window as a batch: planes [B, N, N, C] (``host_dtype``), int32 target / to_move / rank,
    int8 outcome (+1 the mover won, -1 lost, 0 draw, -128 unknown), float32 weight (0: padding), and a profiled
    window's float32 profile [B, 46]."""
    if "idx" in window:
        planes = np.take(window["table"], window["idx"][a:b], axis=0)
    else:  # a copy: windows from worker processes live in shared memory, freed with the window
        planes = np.array(window["planes"][a:b])
    return {"planes": _host_cast(planes, host_dtype),
            "target": window["target"][a:b].astype(np.int32),
            "to_move": window["to_move"][a:b].astype(np.int32),
            "rank": window["player_rank"][a:b].astype(np.int32),
            "outcome": window["outcome"][a:b].astype(np.int8),
            "weight": window["weight"][a:b].astype(np.float32),
            **({"profile": window["profile"][a:b].astype(np.float32)} if "profile" in window else {}),
            **({"ownership": window["ownership"][a:b].astype(np.int8),
                "ownership_source": window["ownership_source"][a:b].astype(np.int8),
                "score": window["score"][a:b].astype(np.float32)} if "ownership" in window else {})}


def wants_targets(config) -> bool:
    """Whether a run's config trains the ownership or score head (its ``ownership_weight`` / ``score_weight``
    > 0): its batches then carry ``ownership`` int8 [B, N, N], ``ownership_source`` int8 and ``score`` float32."""
    return float(config.get("ownership_weight", 0.0)) > 0 or float(config.get("score_weight", 0.0)) > 0


def batch_spec(batch_size: int, board_size: int, num_planes: int, host_dtype: str = "uint8",
               profile: bool = False, targets: bool = False) -> dict[str, tuple]:
    """``{name: (shape, numpy dtype)}`` of a :func:`window_batch` batch, without reading data (for compiling the
    train step ahead and estimating its memory, :mod:`kifunet.train.memory`)."""
    dtype = {"uint8": np.uint8, "float32": np.float32}.get(host_dtype)
    if dtype is None:
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    b, n = int(batch_size), int(board_size)
    return {"planes": ((b, n, n, int(num_planes)), np.dtype(dtype)), "target": ((b,), np.dtype(np.int32)),
            "to_move": ((b,), np.dtype(np.int32)), "rank": ((b,), np.dtype(np.int32)),
            "outcome": ((b,), np.dtype(np.int8)), "weight": ((b,), np.dtype(np.float32)),
            **({"profile": ((b, profiles.SIZE), np.dtype(np.float32))} if profile else {}),
            **({"ownership": ((b, n, n), np.dtype(np.int8)), "ownership_source": ((b,), np.dtype(np.int8)),
                "score": ((b,), np.dtype(np.float32))} if targets else {})}


class BatchIterator(grain.DatasetIterator):
    """Batches of ``batch_size`` rows cut from a grain iterator over windows (``make_windows(start)``: windows
    ``start, start + 1, ...``). ``get_state()`` is JSON (``window``, ``taken``, ``base``, ``grain``, ``workers``);
    ``set_state`` resumes so that the next batch is the one the saved iterator would have returned, whatever the
    number of workers."""

    def __init__(self, make_windows, batch_size: int, host_dtype: str = "uint8", workers: int = 0):
        if host_dtype not in HOST_DTYPES:
            raise ConfigError(f"host_dtype must be one of {HOST_DTYPES}, got {host_dtype!r}")
        windows = make_windows(0)
        super().__init__(windows)
        self._make_windows = make_windows
        self._windows = windows
        self.batch_size = int(batch_size)
        self.host_dtype = host_dtype
        self.workers = int(workers)
        self._base = 0  # absolute index of the grain iterator's first window
        self._fetched = 0  # windows taken from the grain iterator
        self._window = None
        self._window_state = windows.get_state()
        self._taken = 0

    def _rows(self) -> int:
        return 0 if self._window is None else len(self._window["target"])

    def _fetch(self) -> None:
        self._window_state = self._windows.get_state()
        self._window = next(self._windows)
        self._fetched += 1
        self._taken = 0

    def __next__(self) -> dict[str, np.ndarray]:
        b = self.batch_size
        while self._window is None or (self._taken + 1) * b > self._rows():
            self._fetch()
        a = self._taken * b
        self._taken += 1
        return window_batch(self._window, a, a + b, self.host_dtype)

    def get_state(self) -> dict[str, Any]:
        current = self._base + self._fetched - (1 if self._window is not None else 0)
        return {"window": int(current), "taken": int(self._taken if self._window is not None else 0),
                "base": int(self._base), "grain": self._window_state, "workers": self.workers}

    def _restart(self, base: int) -> None:
        self._windows.close()
        self._windows = self._make_windows(base)
        self._parents = (self._windows,)
        self._base = base

    def set_state(self, state: dict[str, Any]) -> None:
        window, taken = int(state["window"]), int(state["taken"])
        self._window = None
        self._taken = 0
        if int(state.get("workers", -1)) == self.workers:
            if int(state["base"]) != self._base:
                self._restart(int(state["base"]))
            self._windows.set_state(state["grain"])
            self._fetched = window - self._base
        else:  # another layout: a new grain iterator starting at the saved window
            self._restart(window)
            self._fetched = 0
        self._window_state = self._windows.get_state()
        if taken > 0:
            self._fetch()
            self._taken = taken

    def close(self) -> None:
        self._window = None  # worker windows live in shared memory, released when no longer referenced
        windows = getattr(self, "_windows", None)  # None when __init__ failed
        if windows is not None:
            windows.close()
