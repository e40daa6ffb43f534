"""The runs every submission test starts from, made once per session: a scripted model with a judge and the
offline baselines on two demo samples, each submitted."""

from __future__ import annotations

from pathlib import Path

import pytest
from submission_support import baseline_run, model_run, submit, two_samples


@pytest.fixture(scope="session")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_samples(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def model_bundle(tmp_path_factory: pytest.TempPathFactory, data: Path) -> Path:
    folder = tmp_path_factory.mktemp("model")
    return submit(model_run(folder, data), folder / "scripted.rescue.zip", "--training-data", "none",
                  "--zero-shot")


@pytest.fixture(scope="session")
def baseline_bundle(tmp_path_factory: pytest.TempPathFactory, data: Path) -> Path:
    folder = tmp_path_factory.mktemp("baselines")
    return submit(baseline_run(folder, data), folder / "baselines.rescue.zip")


