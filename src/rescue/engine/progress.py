"""What a run shows while it works: a rich progress bar per model and task (rate, ETA, failures, retries)
and a structured log file (JSON lines, one event per line) for every retry, failure and finished task.

On a terminal the bars redraw in place. Where stderr is no terminal (a log file, CI), redrawn bars would come out
all at once at the end, so the same counters are printed as plain lines at a steady interval instead
(``--progress-interval``), as pip and datasets do.

Successful requests are counted, not logged one by one, to keep the hot path lean.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from rescue.engine.run_options import RunOptions
from rescue.files import JsonLinesLog
from rescue.display import terminal_text


class RunLog(JsonLinesLog):
    """``run.log``: JSON lines, appended (a resumed run continues the same file), flushed per event."""

    def __init__(self, path: Path | None):
        # Called with (event, fields) for every event, file or not: the terminal hears of a dead endpoint at once.
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(path)

    def event(self, event: str, **fields: Any) -> None:
        """Tell the listeners and append one event to run.log, with the time."""
        for listener in self.listeners:
            listener(event, fields)
        super().event(event, **fields)


class TaskProgress:
    """Counters of one (model, task) pair; the display reads them."""

    def __init__(self, display: ProgressDisplay, model: str, task: str, total: int, label: str | None = None):
        self.display = display
        self.model = model
        self.task = task
        self.total = total
        self.failures = 0
        self.retries = 0
        self._id: Any = None
        # Model ids come from the user or a suite file: never markup, never raw control characters.
        self.label = label or f"{terminal_text(model, max_length=40)} · {terminal_text(task)}"
        if display.progress is not None:
            self._id = display.progress.add_task(self.label, total=total, failures=0, retries=0)

    def advance(self, instances: int, failures: int = 0) -> None:
        """Count ``instances`` done, ``failures`` of them failed."""
        self.failures += failures
        if self._id is not None:
            self.display.progress.update(self._id, advance=instances, failures=self.failures)

    def describe(self, label: str) -> None:
        """A new label (a phase saying what it is doing now)."""
        if self._id is not None:
            self.display.progress.update(self._id, description=label)

    def fitting(self, done: int, steps: int) -> None:
        """A baseline fitting before it answers: the bar says which of its ``steps`` it is on (``done`` are),
        then shows its own label again."""
        self.describe(self.label if done >= steps else f"{self.label} · fitting {done + 1}/{steps}")

    def retry(self) -> None:
        """Count one retry."""
        self.retries += 1
        if self._id is not None:
            self.display.progress.update(self._id, retries=self.retries)


def _label_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.table import Column
    from rich.text import Text

    class LabelColumn(ProgressColumn):
        """The bar's label on one line, cut with an ellipsis where the terminal is too narrow for it and the
        numbers (the label's column is the one that gives way)."""

        def render(self, task: Any) -> Text:
            return Text.assemble(Text.from_markup(task.description), no_wrap=True, overflow="ellipsis")

    return LabelColumn(table_column=Column(overflow="ellipsis"))


def _rate_column(table_column: Any) -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Instances per second, from rich's own speed estimate."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            if speed is None:
                return Text("   -/s", style="cyan")
            return Text(f"{speed:4.1f}/s" if speed < 100 else f"{speed:4.0f}/s", style="cyan")

    return RateColumn(table_column=table_column)


# Seconds between two plain progress reports where stderr is no terminal: --progress-interval's default.
DEFAULT_PROGRESS_INTERVAL: float = RunOptions.progress_interval


def plain_line(task: Any) -> str:
    """One bar as a plain line (a log file's progress): its label, count, share, rate, time left, failures and
    retries, the same counters the bar shows."""
    from rich.text import Text

    label = Text.from_markup(task.description).plain  # labels are markup with ids escaped, as the bars draw them
    total = task.total or 0
    share = f" ({task.completed / total:.0%})" if total else ""
    speed = task.finished_speed or task.speed
    rate = f"{speed:.1f}/s" if speed else "-/s"
    left = task.time_remaining
    when = "done" if task.finished else ("time left unknown" if left is None else f"{_clock(left)} left")
    return (f"{label}: {task.completed:g}/{total:g}{share}, {rate}, {when}, "
            f"fail {task.fields.get('failures', 0)} retry {task.fields.get('retries', 0)}")


def _clock(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class PlainReports:
    """Every ``interval`` seconds, one line per bar still running (and once for a bar that finished since), from
    a thread of its own, so a log file hears of a run that waits on its endpoint too; a last line per bar at stop."""

    def __init__(self, display: ProgressDisplay, interval: float):
        self.display = display
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
        tasks = [t for t in self.display.progress.tasks if last or t.id not in self._told_done]
        if not tasks:
            return
        from rich.text import Text

        console = self.display.console
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


class ProgressDisplay:
    """A rich Progress on stderr, or nothing with ``quiet``; where stderr is no terminal, plain lines every
    ``interval`` seconds (:class:`PlainReports`) instead of bars redrawn in place."""

    def __init__(self, quiet: bool, interval: float = DEFAULT_PROGRESS_INTERVAL):
        from rescue.display import terminal_console

        self.progress: Any = None
        self.plain: PlainReports | None = None
        self.console = terminal_console(stderr=True)  # model names and errors from outside: escaped
        live = self.console.is_terminal or self.console.is_jupyter  # where bars redraw in place
        if not quiet:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            from rich.table import Column

            def whole() -> Column:
                # A count or a time is never cut ("161/1…" said nothing): the label gives way instead.
                return Column(no_wrap=True)

            self.progress = Progress(
                # The label takes what the numbers leave, cut with an ellipsis on a narrow terminal.
                _label_column(),
                # Narrow enough for an 80-column terminal: the count says what a percentage would.
                BarColumn(bar_width=12, table_column=whole()),
                MofNCompleteColumn(table_column=whole()),
                _rate_column(whole()),
                TimeRemainingColumn(table_column=whole()),
                TextColumn("[red]fail {task.fields[failures]}[/] [yellow]retry {task.fields[retries]}[/]",
                           table_column=whole()),
                console=self.console,
                transient=False,
                # No terminal: rich would print every bar once, at the end; the counters are kept, and reported
                # as plain lines at a steady interval.
                disable=not live,
            )
            if not live:
                self.plain = PlainReports(self, interval)

    def warn(self, text: str) -> None:
        """A line above the bars (or on stderr when quiet); ``text`` is shown literally, never as markup."""
        from rich.text import Text

        self.console.print(Text("warning: ", style="yellow") + Text(text), soft_wrap=True, highlight=False)

    def note(self, text: str) -> None:
        """A line of information above the bars (shown quiet or not); ``text`` is shown literally."""
        from rich.text import Text

        self.console.print(Text(text), soft_wrap=True, highlight=False)

    def task(self, model: str, task: str, total: int) -> TaskProgress:
        """A bar for one model on one task of ``total`` instances."""
        return TaskProgress(self, model, task, total)

    def phase(self, label: str, total: int) -> TaskProgress:
        """A bar for a phase of the run that is not one model on one task (BERTScore): count, rate, time left."""
        return TaskProgress(self, "", "", total, label=label)

    def __enter__(self) -> ProgressDisplay:
        if self.progress is not None:
            self.progress.start()
        if self.plain is not None:
            self.plain.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.plain is not None:
            self.plain.stop()
        if self.progress is not None:
            self.progress.stop()
