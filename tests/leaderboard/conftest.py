"""A leaderboard made for real once per session: two scripted models, the offline baselines and two people, each
run, submitted, verified and added; the site built from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli import invoke_main
from submission_support import baseline_run, human_run, model_run, submit, two_samples


@pytest.fixture(scope="session")
def board_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_samples(tmp_path_factory.mktemp("board-data"))


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory, board_data: Path) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("board-runs")
    made = {
        "model-a": submit(model_run(work / "a", board_data), work / "model-a.rescue.zip", "--zero-shot"),
        "model-b": submit(model_run(work / "b", board_data, model="other-model", served="other-v1", salt="b"),
                          work / "model-b.rescue.zip"),
        "baselines": submit(baseline_run(work, board_data), work / "baselines.rescue.zip"),
        "people": submit(human_run(work / "people", board_data), work / "people.rescue.zip"),
    }
    return made


@pytest.fixture(scope="session")
def entries(tmp_path_factory: pytest.TempPathFactory, bundles: dict[str, Path], board_data: Path) -> Path:
    folder = tmp_path_factory.mktemp("board") / "entries"
    for bundle in bundles.values():
        added = invoke_main(["leaderboard", "add", str(bundle), "--to", str(folder), "--data", str(board_data)])
        assert added.exit_code == 0, added.output
    return folder


@pytest.fixture(scope="session")
def site(entries: Path) -> Path:
    out = entries.parent / "site"
    built = invoke_main(["leaderboard", "build", str(entries), "--out", str(out)])
    assert built.exit_code == 0, built.output
    return out
