"""Ctrl-C and SIGTERM (``timeout``, a scheduler) during a run: the first stops it cleanly, a second at once.

While the run asks its models and judges, the first signal stops every request not yet answered: none is sent
any more and those in flight are dropped (their instances are asked again by the rerun), and the run goes on
to write ``results.json`` marked incomplete, its ``stopped`` naming the signal, as after ``--max-cost``. Every
answer received before is in the cache and in the results. In any other phase (the batch API's polling,
BERTScore) and at a second signal the run is cancelled at once, as Ctrl-C always did; the children (ffmpeg)
are killed. Signals are taken over only by :func:`rescue.engine.runner.run` (``rescue run``), in the main
thread; the notebook API leaves them to the notebook.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from rescue import proc
from rescue.engine.progress import ProgressDisplay, RunLog
from rescue.llm import Budget

# What results.json's ``stopped`` and the terminal say of each signal (the words Ctrl-C always printed).
NOTES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated (SIGTERM)"}
ASKING = "asking"  # the phase a first signal stops cleanly; any other is cancelled at once


class RunSignals:
    """What a run does with Ctrl-C and SIGTERM while :meth:`taken` holds them."""

    def __init__(self, budget: Budget, display: ProgressDisplay, log: RunLog):
        self.budget = budget
        self.display = display
        self.log = log
        self.phase = ""
        self.received: int | None = None  # the first signal, once one came

    @property
    def terminated(self) -> bool:
        """Whether the first signal was SIGTERM (exit 143, not Ctrl-C's 130)."""
        return self.received == signal.SIGTERM

    @contextlib.contextmanager
    def taken(self, enabled: bool) -> Iterator[RunSignals]:
        """Ctrl-C and SIGTERM handled as the module says while the block runs (``enabled`` and in the main
        thread); the handlers before come back afterwards."""
        if not enabled or threading.current_thread() is not threading.main_thread():
            yield self
            return
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        previous = {signum: signal.getsignal(signum) for signum in NOTES}
        for signum in NOTES:
            loop.add_signal_handler(signum, self._on_signal, signum, task)
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                loop.remove_signal_handler(signum)
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)

    def _on_signal(self, signum: int, task: asyncio.Task[Any] | None) -> None:
        if self.received is None and self.phase == ASKING:
            self.received = signum
            note = NOTES[signal.Signals(signum)]
            self.budget.stop(note)
            self.log.event("stopping", signal=signal.Signals(signum).name)
            again = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
            self.display.warn(f"{note}: no request is sent any more and those in flight are dropped; the answers "
                              f"received are kept and results.json is written, marked incomplete ({again} again "
                              "stops at once)")
            return
        if self.received is None:
            self.received = signum
        proc.kill_children()
        if task is not None:
            task.cancel()
