"""Shared test fixtures: the real KGS archives (skipped cleanly when ../shared is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

KGS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kgs"
KGS_2017_01 = KGS_DIR / "KGS-2017_01-19-733-.tar.gz"


@pytest.fixture
def kgs_2017_01() -> Path:
    if not KGS_2017_01.exists():
        pytest.skip(f"real KGS archive not found at {KGS_2017_01} (../shared is absent in a fresh clone)")
    return KGS_2017_01


@pytest.fixture
def kgs_dir() -> Path:
    if not KGS_DIR.is_dir():
        pytest.skip(f"real KGS archives not found at {KGS_DIR} (../shared is absent in a fresh clone)")
    return KGS_DIR
