"""The one clock-time formatter (issue #25, item 5): WebVTT documents, build messages and test projects."""

from __future__ import annotations

from rescue.data.text import clock_time
from rescue.media._subtitles import Cue, webvtt


def test_clock_time_rounds_to_the_millisecond_and_carries_into_minutes_and_hours():
    assert clock_time(0) == "00:00:00.000"
    assert clock_time(61.5) == "00:01:01.500"
    assert clock_time(59.9996) == "00:01:00.000"
    assert clock_time(3600 + 2.25) == "01:00:02.250"


def test_a_negative_time_keeps_its_sign_for_messages_and_webvtt_clamps_it():
    assert clock_time(-1.5) == "-00:00:01.500"
    document = webvtt([Cue(1, -0.2, 1.0, "hi")])
    assert "00:00:00.000 --> 00:00:01.000" in document
