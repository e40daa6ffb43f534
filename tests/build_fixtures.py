"""Fixtures of the ``rescue build`` tests: one synthetic session made once per test run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from media_helpers import Line, conversation, make_video, write_srt

SESSION_SECONDS = 400.0
SCENE_AT = 200.0
LONG_GAPS = (150.0, 310.0)


@dataclass(frozen=True)
class SessionFiles:
    video: Path
    subs: Path
    lines: list[Line]


@pytest.fixture(scope="session")
def session_files(tmp_path_factory) -> SessionFiles:
    folder = tmp_path_factory.mktemp("session")
    lines = conversation(SESSION_SECONDS, long_gaps=LONG_GAPS)
    video = make_video(folder / "s01e01.mp4", SESSION_SECONDS, scene_at=SCENE_AT, speech=lines)
    return SessionFiles(video, write_srt(folder / "s01e01.srt", lines), lines)


@dataclass(frozen=True)
class Prepared:
    """The session built once without a model: its clips, subtitles and proposed segments file, copied
    into each test's output folder so tests only pay for what they check (a rerun reuses the clips)."""

    folder: Path
    segments: Path

    def seed(self, out: Path) -> Path:
        import shutil

        for name in ("clips", "subtitles"):
            shutil.copytree(self.folder / name, out / name)
        return out


@pytest.fixture(scope="session")
def prepared(session_files, tmp_path_factory) -> Prepared:
    from rescue.builder import BuildConfig, SessionSpec, build

    folder = tmp_path_factory.mktemp("prepared")
    spec = SessionSpec(session_files.video, session_files.subs, "couple", ("Alan", "Evelyn"), "alan_and_evelyn")
    build(BuildConfig(out=folder, sessions=[spec]))
    return Prepared(folder, folder / "segments/alan_and_evelyn/s01e01.csv")
