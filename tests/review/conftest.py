"""Fixtures of the review tool's tests, declared once.

``project`` is a project folder with real clips, made once per test run (cutting its clips is the costly part).
Tests read it; the two that write into it (a symlink, the waveform cache) undo what they wrote. A module that
needs another project overrides ``project``, with ``small_project`` (two segments, no clips, new for each test)
or its own. ``app`` is a fresh app and database on that project for each test, with the accounts of
``review_helpers.USERS``; ``db_url`` is SQLite in the test's folder, and a module that checks both backends
overrides it with ``review_db_url``. ``ann`` and ``ada`` are logged-in clients; ``server`` serves the app over
real HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from review_helpers import Client, Server, make_app

from rescue.testing.review_project import demo_samples, make_review_project


@pytest.fixture(scope="session")
def media_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_review_project(tmp_path_factory.mktemp("review") / "proj", max_seconds=60)


@pytest.fixture
def project(media_project: Path) -> Path:
    return media_project


@pytest.fixture
def small_project(tmp_path: Path) -> Path:
    """Two demo segments without clips, new for each test: for the rules and accounts, which need no media."""
    return make_review_project(tmp_path / "p", demo_samples()[:2], media=False)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'review.db'}"


@pytest.fixture
def app(project: Path, db_url: str) -> Iterator[Any]:
    application = make_app(project, db_url)
    yield application
    application.state.engine.dispose()


@pytest.fixture
def ann(app: Any) -> Client:
    return Client(app, "ann")


@pytest.fixture
def ada(app: Any) -> Client:
    return Client(app, "ada")


@pytest.fixture
def server(app: Any) -> Iterator[Server]:
    running = Server(app)
    yield running
    running.stop()
