"""Shared fixtures: the real RESCUE-Bench samples (when ../shared is present) and the bundled demo data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_DATA = REPO_ROOT.parent / "shared" / "data" / "rescue" / "rescue_subset.jsonl"


@pytest.fixture(scope="session")
def real_data_path() -> Path:
    if not REAL_DATA.exists():
        pytest.skip(f"real RESCUE-Bench samples not present at {REAL_DATA} (they live in ../shared, outside a fresh clone)")
    return REAL_DATA


@pytest.fixture(scope="session")
def real_samples(real_data_path):
    from rescue.data.loading import load_samples

    return load_samples(real_data_path)


@pytest.fixture(scope="session")
def demo_samples():
    from rescue.data.loading import load_samples

    return load_samples(None)
