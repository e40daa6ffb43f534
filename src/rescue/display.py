"""Text that comes from outside (model ids, sample ids, labels, an endpoint's error body) made safe to show: on a
terminal (:func:`terminal_text` for one value in a rich markup string, :func:`terminal_json` for JSON printed
whole), in a Markdown table cell (:func:`markdown_text`, :func:`markdown_table`).

Every console the CLI prints through is a :func:`terminal_console`: whatever reaches it, from a value a command
forgot to pass through :func:`terminal_text` to a model's answer in a table, is written with every control,
format and separator character escaped (``\x1b``, ``\u202e``, ``\u200b``), so no escape sequence, bidi override or
invisible character from outside text reaches the terminal. :func:`terminal_text` at each value is still what
shows it whole and unstyled (``[bold]`` literally) and measures its columns right."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rescue.data.text import markdown_text as markdown_text
from rescue.data.text import visible_text

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PLAIN_PROGRESS_INTERVAL", "PlainProgress", "live_console", "markdown_table", "markdown_text", "plain_line", "terminal_console",
           "terminal_json", "terminal_safe", "terminal_text"]


def terminal_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` ready for a rich markup string: controls escaped, ``[...]`` shown literally, never styled."""
    from rich.markup import escape

    return escape(visible_text(text, max_length=max_length))


def terminal_safe(text: str) -> str:
    """``text`` with every control, format and separator character escaped but its line breaks (what a rich
    console writes may hold many lines); printable text, non-Latin scripts included, as it is."""
    if text.isprintable():
        return text
    return "\n".join(visible_text(line) for line in text.split("\n"))


def terminal_json(text: str) -> str:
    """JSON text (``json.dumps``'s, any indent) with every character that could act on a terminal written as a
    ``\\uXXXX`` escape: still valid JSON holding the same values, CJK and accents kept as they are. (Inside a
    JSON string such a character may only be there raw or escaped; outside strings JSON has none.)"""
    return "\n".join(line if line.isprintable() else "".join(_json_char(c) for c in line)
                     for line in text.split("\n"))


def _json_char(char: str) -> str:
    if char == "\t" or visible_text(char) == char:
        return char
    code = ord(char)
    if code > 0xFFFF:  # a surrogate pair, as JSON writes it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def terminal_console(**settings: Any) -> Console:
    """A rich ``Console(**settings)`` that writes every text it renders through :func:`terminal_safe` (its own
    control sequences, styles and cursor moves, are not text and pass as they are)."""
    return _terminal_console_class()(**settings)


@functools.cache
def _terminal_console_class() -> type[Console]:
    # Made on first use: importing rich costs `rescue --help` a sixth of its time, and help prints nothing with it.
    from rich.console import Console
    from rich.segment import Segment

    class TerminalConsole(Console):
        def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
            """The segments rich renders ``renderable`` into, their text made safe for a terminal."""
            for segment in super().render(renderable, options):
                if segment.control or segment.text.isprintable():
                    yield segment
                else:
                    yield Segment(terminal_safe(segment.text), segment.style, segment.control)

    return TerminalConsole


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub Markdown table; every cell through :func:`markdown_text` (one line, no raw HTML, ``|`` escaped)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(str(c)) for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)]) + "\n"


# --- progress where no terminal redraws it ---------------------------------------------------------------------


# Seconds between two plain progress lines (rescue run's --progress-interval default, the media bar's interval).
PLAIN_PROGRESS_INTERVAL = 30.0


def live_console(console: Console) -> bool:
    """Whether bars redraw in place on ``console`` (a terminal or a notebook); elsewhere rich prints every bar once,
    at the end, and :class:`PlainProgress` says the same in plain lines as the work goes."""
    return bool(console.is_terminal or console.is_jupyter)


def plain_line(task: Any) -> str:
    """One bar as a plain line (a log file's progress): its label, count, share, rate, time left and, where the bar
    counts them, failures and retries: the same counters the bar shows."""
    from rich.text import Text

    label = Text.from_markup(task.description).plain  # labels are markup with ids escaped, as the bars draw them
    total = task.total or 0
    share = f" ({task.completed / total:.0%})" if total else ""
    speed = task.finished_speed or task.speed
    rate = f"{speed:.1f}/s" if speed else "-/s"
    left = task.time_remaining
    when = "done" if task.finished else ("time left unknown" if left is None else f"{_clock(left)} left")
    counts = " ".join(f"{word} {task.fields[field]}" for field, word in (("failures", "fail"), ("retries", "retry"))
                      if field in task.fields)  # as the bar shows them: "fail 3 retry 2"
    return f"{label}: {task.completed:g}/{total:g}{share}, {rate}, {when}" + (f", {counts}" if counts else "")


def _clock(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class PlainProgress:
    """A rich ``progress`` told as plain lines on ``console`` where it is no terminal (a log file, CI): every
    ``interval`` seconds one line per bar still running (and once for a bar that finished since), from a thread of
    its own, so a log file hears of work that waits (an endpoint, ffmpeg) too; a last line per bar at stop."""

    def __init__(self, progress: Any, console: Console, interval: float):
        self.progress = progress
        self.console = console
        self.interval = interval
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._told_done: set[Any] = set()

    def start(self) -> None:
        """Begin reporting."""
        self._thread = threading.Thread(target=self._loop, name="rescue-progress-lines", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.report()

    def report(self, *, last: bool = False) -> None:
        """One line per bar running (every bar with ``last``), after a line with the time since the start."""
        tasks = [t for t in self.progress.tasks if last or t.id not in self._told_done]
        if not tasks:
            return
        from rich.text import Text

        console = self.console
        console.print(Text(f"progress after {_clock(time.monotonic() - self.started)}:"), soft_wrap=True,
                      highlight=False)
        for task in tasks:
            if task.finished:
                self._told_done.add(task.id)
            console.print(Text("  " + plain_line(task)), soft_wrap=True, highlight=False)

    def stop(self) -> None:
        """Stop reporting; every bar's last line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.report(last=True)
