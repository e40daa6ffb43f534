"""The run's progress at 80 columns (issue 35): counts and times are never cut ("161/1…" said nothing); the label
gives way, cut with an ellipsis on its one line. Rendered with rich at fixed widths, as a terminal shows it."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from rescue.engine.progress import ProgressDisplay


def _render(display: ProgressDisplay, width: int) -> list[str]:
    console = Console(width=width, color_system=None, file=io.StringIO())
    console.print(display.progress.make_tasks_table(display.progress.tasks))
    return [line.rstrip() for line in console.file.getvalue().splitlines()]


@pytest.mark.parametrize("width", [80, 72, 60])
@pytest.mark.parametrize(("model", "total", "done", "failures", "retries"), [
    ("openai/gpt-4o-mini-2024-07-18", 1234, 161, 3, 2),
    ("dashscope/qwen3-235b-a22b-instruct-2507", 99999, 12345, 1234, 567),
    ("m", 7, 7, 0, 0),
    ("\x1b[31m[bold]hostile[/bold] name " + "x" * 200, 458, 347, 347, 0),
])
def test_counts_and_times_are_whole_and_each_bar_is_one_line(width, model, total, done, failures, retries):
    display = ProgressDisplay(quiet=False)
    bar = display.task(model, "itp", total)
    bar.advance(done, failures)
    for _ in range(retries):
        bar.retry()
    lines = _render(display, width)
    assert len(lines) == 1, lines  # one line a bar: the label is cut, never wrapped
    (line,) = lines
    assert len(line) <= width
    assert f" {done}/{total} " in line, line
    assert re.search(r" (-:--:--|\d+:\d\d:\d\d) ", line), line  # the time left, whole
    assert line.endswith(f"fail {failures} retry {retries}"), line
    assert "\x1b" not in line


def test_a_label_that_fits_is_shown_whole():
    display = ProgressDisplay(quiet=False)
    display.task("openai/gpt-4o-mini", "itp", 1234).advance(161)
    (line,) = _render(display, 80)
    assert line.startswith("openai/gpt-4o-mini · itp ") and "…" not in line
