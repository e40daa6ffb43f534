"""Shared fixtures: the real RESCUE-Bench samples (when ../shared is present) and the bundled demo data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from real_data import REAL_DATA, REAL_DATA_ENV

# The suite imports rescue, its test modules and their libraries in this process and in many child processes.
# Where the environment turns bytecode caching off (PYTHONDONTWRITEBYTECODE), each of them compiled every module
# again: about a third more CPU for a quick run. The caches go to __pycache__ folders git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The rescue build session (synthetic media) for every test module that asks for it.
pytest_plugins = ("build_fixtures",)


@pytest.fixture(scope="session")
def real_data_path() -> Path:
    if not REAL_DATA.exists():
        where = f"${REAL_DATA_ENV}={REAL_DATA}" if os.environ.get(REAL_DATA_ENV) else str(REAL_DATA)
        pytest.skip(f"real RESCUE-Bench samples not found at {where}; set {REAL_DATA_ENV} to a .jsonl file of "
                    "real samples to run this test (they live in ../shared, outside a fresh clone)")
    return REAL_DATA


@pytest.fixture(scope="session")
def real_samples(real_data_path):
    from rescue.data.loading import load_samples

    return load_samples(real_data_path)


@pytest.fixture(scope="session")
def demo_samples():
    from rescue.data.loading import load_samples

    return load_samples(None)


@pytest.fixture(scope="module")
def itp_run_dir(tmp_path_factory) -> Path:
    """A finished ``rescue run`` of ITP on two demo samples (the default offline model, no BERTScore), made through
    the CLI once per test module, for the tests that only read a run (report, submit)."""
    from _cli import invoke_main

    out = tmp_path_factory.mktemp("runs") / "run"
    result = invoke_main(["run", "--out", str(out), "--tasks", "itp", "--limit-samples", "2", "--no-bertscore",
                          "--quiet"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL server on 127.0.0.1 for the whole run (skipped, saying why, where it cannot start)."""
    from rescue.testing.postgres import temporary_cluster, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(f"PostgreSQL: {reason}")
    with temporary_cluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster):
    """The URL of a new empty database on the throwaway server, dropped after the test."""
    url = postgres_cluster.create_database()
    yield url
    postgres_cluster.drop_database(url)  # also ends connections an app's pool still holds


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def review_db_url(request, tmp_path):
    """The review tool's database, once per backend: SQLite in WAL mode (the default) and PostgreSQL (--db URL)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'review.db'}"
    return request.getfixturevalue("postgres_url")
