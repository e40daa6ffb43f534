"""An ER answer that shows nothing is refused like an empty one (#42 item 9), through the real benchmark app: zero-width
spaces, joiners, a BOM, direction marks and NUL or other control characters, alone or inside a phrase; a phrase
written in any script, or with an emoji joined by ZWJ, is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScanningClient, bench_app, make_bench


@pytest.fixture
def app(tmp_path: Path) -> Any:
    application = bench_app(make_bench(tmp_path / "bench"), tmp_path / "review.db")
    yield application
    application.state.engine.dispose()


def er_url(client: ScanningClient) -> str:
    entry = next(q for q in client.get("/api/bench/queue").json() if q["task"] == "er")
    return f"/api/bench/items/er/{entry['number']}"


@pytest.mark.parametrize("emotion", [
    "\u200b", "\u200b\u200b\u200b", " \u200b \u200c\u200d ", "\ufeff", "\u2060", "\u200e\u200f", "\u202e",
    "\x00", "\x00\x00", " \x00 ", "\u3000\u200b",
    "hurt\x00", "\x00hurt", "hu\x1b[31mrt", "hurt\x07", "hurt\x7f",
])
def test_an_er_answer_that_shows_nothing_or_holds_a_control_character_is_a_422(app, emotion):
    ann = ScanningClient(app, "ann")
    url = er_url(ann)
    answer = ann.write("PUT", url + "/answer", {"value": {"emotion": emotion, "intensity": 5}, "version": 0})
    assert answer.status_code == 422, (emotion, answer.text)  # the invisible ones were saved, 200
    assert "answer.emotion" in answer.json()["detail"]
    assert ann.get(url).json()["version"] == 0  # nothing was stored


@pytest.mark.parametrize("emotion", ["hurt", "  hurt\n and\tangry ", "blessé", "受伤", "hurt \U0001F469\u200d\U0001F467"])
def test_a_phrase_in_any_script_is_kept(app, emotion):
    ann = ScanningClient(app, "ann")
    url = er_url(ann)
    answer = ann.write("PUT", url + "/answer", {"value": {"emotion": emotion, "intensity": 5}, "version": 0})
    assert answer.status_code == 200, answer.text
    assert ann.get(url).json()["value"]["emotion"] == " ".join(emotion.split())
