"""What a run shows while it works: a rich progress bar per model and task (rate, ETA, failures, retries)
and a structured log file (JSON lines, one event per line) for every retry, failure and finished task.

On a terminal the bars redraw in place. Where stderr is no terminal (a log file, CI), redrawn bars would come out
all at once at the end, so the same counters are printed as plain lines at a steady interval instead
(``--progress-interval``), as pip and datasets do.

Successful requests are counted, not logged one by one, to keep the hot path lean.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Callable
from typing import Any

from rescue.engine.run_options import RunOptions
from rescue.files import JsonLinesLog
from rescue.display import PlainProgress, live_console, terminal_text


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


class ProgressDisplay:
    """A rich Progress on stderr, or nothing with ``quiet``; where stderr is no terminal, plain lines every
    ``interval`` seconds (:class:`rescue.display.PlainProgress`) instead of bars redrawn in place."""

    def __init__(self, quiet: bool, interval: float = DEFAULT_PROGRESS_INTERVAL):
        from rescue.display import terminal_console

        self.progress: Any = None
        self.plain: PlainProgress | None = None
        self.console = terminal_console(stderr=True)  # model names and errors from outside: escaped
        live = live_console(self.console)  # where bars redraw in place
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
                self.plain = PlainProgress(self.progress, self.console, interval)

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
