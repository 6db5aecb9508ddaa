"""The build's progress display: one tqdm bar per stage with the rate of positions (games/s and positions/s)."""

from __future__ import annotations

import sys
import time


class Progress:
    """A tqdm bar of ``total`` ``unit``\\ s labelled ``desc``, showing positions/s; a no-op when not ``enabled``
    (``None``: enabled when stderr is a terminal)."""

    def __init__(self, enabled: bool | None, total: int | None, desc: str, unit: str = "game"):
        self.bar = None
        self.t0 = time.time()
        self.positions = 0
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, smoothing=0.1)

    def update(self, games: int, positions: int):
        self.positions += positions
        if self.bar is not None:
            self.bar.update(games)
            dt = max(time.time() - self.t0, 1e-9)
            self.bar.set_postfix_str(f"{self.positions / dt:,.0f} pos/s", refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()
