"""Every exception rescue defines, and the exit code each ends a command with (one place for both).

A module keeps its own name for an error by importing it from here (``from rescue.errors import X as X``); the
data's own errors (:class:`~rescue.data.errors.DataError` and its issues) live in :mod:`rescue.data.errors`, on
this base. Only exceptions private to one module (a name starting with ``_``, never seen outside it) live where
they are raised. The ground floor, importing nothing from rescue, so that every layer can raise and catch these;
tests/test_layers.py holds that true, and tests/test_errors.py that every public exception is a
:class:`RescueError` with its exit code (so a user meets a message, never a traceback).

Exit codes: 0 done; :data:`EXIT_NOT_VERIFIED` (1) for ``rescue verify`` whose checks ran and one failed;
:data:`EXIT_ERROR` (2) for anything a user can fix (bad input, bad options, a full disk, a
folder that is a file), the message naming what to fix; :data:`EXIT_INCOMPLETE` (3) for a command that stopped
with work left (rerunning it continues); :data:`EXIT_INTERRUPTED` (130) for Ctrl-C; :data:`EXIT_TERMINATED`
(143) for SIGTERM.
"""

from __future__ import annotations

import errno
import signal
from pathlib import Path
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

EXIT_NOT_VERIFIED = 1  # rescue verify: a check ran and failed (the input itself was readable)
EXIT_ERROR = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
TERMINATED_MESSAGE = "terminated (SIGTERM)."  # the last line of every command SIGTERM ends

# --- the base: errors a user can hit and fix -------------------------------------------------------------


class RescueError(Exception):
    """Base class of errors a user can hit and fix; the CLI prints the message and exits with ``exit_code``."""

    exit_code = EXIT_ERROR


def exit_code(exc: BaseException) -> int:
    """The exit code a command ends with when ``exc`` stops it (see the module's docstring)."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, SystemExit) and isinstance(exc.code, int):
        return exc.code
    return int(getattr(exc, "exit_code", EXIT_ERROR))


# --- data ---------------------------------------------------------------------------------------------------


class FetchError(RescueError):
    """The download failed or what arrived is not the release."""


class NoNetworkError(FetchError):
    """The server could not be reached at all."""


class GroupsError(RescueError):
    """A groups file that cannot be used; the message names file, line and field."""


class SplitError(RescueError):
    """A split that cannot be made or used; the message names the file and what is wrong."""


# --- output folders and child processes ---------------------------------------------------------------------


class OutFolderError(RescueError):
    """An output folder option that names something else than a folder."""


class OutFileError(RescueError):
    """A file rescue would write whose path holds something it must not replace: a FIFO, a device, a socket, a
    folder or a symbolic link (:func:`rescue.atomic.check_target`); the message names the path and what is there."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        super().__init__(f"{path}: {reason}")


class UnsafeNameError(RescueError):
    """A name read from a file (a split, a group) that would become a file or folder name but cannot be one
    safely (a path, empty, control characters, too long, a reserved device name, two names differing only in
    case); the message names the file, the field and the reason."""


class LockedError(RescueError):
    """Another process holds the folder's lock; ``pid`` names it when it could be read."""

    def __init__(self, path: Path, pid: int | None):
        self.path = path
        self.pid = pid
        super().__init__(f"{path}: locked by process {pid if pid is not None else '(unknown)'}")


class Terminated(SystemExit):
    """SIGTERM reached rescue: it stops as after Ctrl-C (children killed, temporaries removed), exit 143.

    A stop signal, not an error: like KeyboardInterrupt it is no :class:`Exception`, so no ``except Exception``
    swallows it."""

    exit_code = EXIT_TERMINATED

    def __init__(self) -> None:
        super().__init__(EXIT_TERMINATED)


class Stopping(RescueError, RuntimeError):
    """A child was asked for while rescue is stopping (SIGTERM or Ctrl-C): none starts any more."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__("rescue is stopping: no new child process starts")


class TimedOut(RescueError):
    """A child ran past its time limit and was killed; a rerun tries it again."""

    exit_code = EXIT_INCOMPLETE

    def __init__(self, seconds: float):
        super().__init__(f"still running after {seconds:.0f} s")
        self.seconds = seconds


# --- tasks --------------------------------------------------------------------------------------------------


class TaskOptionError(RescueError):
    """A build option a task does not have, or a value it does not accept."""


class PromptError(RescueError, ValueError):
    """A request a task cannot render: a context size below -1, an empty batch, a batch of several samples."""


class TaskRegistryError(RescueError):
    """Two different tasks under one name, or a task plugin that cannot be loaded."""


class AnswerError(RescueError, ValueError):
    """What cannot be read from an answer: no JSON object at all, or an item with an unknown label, a
    missing field or a value out of range. The pipeline records it as a parse_error, never raises it."""


class UnreadableJSON(RescueError, ValueError):
    """JSON that is there but cannot be read: ``detail`` is a number past Python's digit limit or a non-finite
    number the decoder refuses; ``nested`` is nesting past the recursion limit. Looking further would meet the
    same value, so the search stops."""

    def __init__(self, detail: str = "", *, nested: bool = False):
        super().__init__("the JSON is nested too deeply to read" if nested
                         else f"the JSON holds a value that cannot be read ({detail})")
        self.detail = detail
        self.nested = nested


# --- models -------------------------------------------------------------------------------------------------


class CredentialError(RescueError):
    """A model cannot be reached: unknown preset, no base URL, or no API key in the environment."""


class ThinkingError(RescueError):
    """--thinking asks for something the model's provider cannot be told."""


class LocalModelError(RescueError):
    """The local model cannot be found or its server does not start."""


class BatchError(RescueError):
    """A batch cannot be sent or read: the endpoint refuses the batch API, or the run directory's batch ledger."""


class BatchUnsettled(BatchError):
    """A batch create whose answer was lost has not shown in the endpoint's list within the settle window
    (``--batch-settle``): the run stops rather than create it twice; rerunning looks again."""

    exit_code = EXIT_INCOMPLETE


class PriceError(RescueError):
    """A price table that cannot be read; the message names the file and the entry."""


class TransientError(RescueError):
    """A failure that may go away: 429, 5xx, a timeout, a dropped connection, an unreadable or empty answer."""

    exit_code = EXIT_INCOMPLETE

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind  # rate_limit | server_error | timeout | connection | bad_response | empty_answer
        self.retry_after = retry_after


class FatalError(RescueError):
    """No request to this endpoint can succeed (bad key, unknown model): stop asking it."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class MalformedAnswer(RescueError):
    """A 200 whose JSON is not a chat completion (message a string, content a number, usage "many")."""

    exit_code = EXIT_INCOMPLETE


class UnreadableEntry(RescueError):
    """A stored answer that can no longer be read; the row is gone, so the request is simply asked again."""

    exit_code = EXIT_INCOMPLETE


# --- media and video ----------------------------------------------------------------------------------------


class MediaError(RescueError):
    """A media step failed: the input is unreadable, or ffmpeg could not do what was asked."""


class SubtitleError(RescueError):
    """A subtitle file cannot be read or breaks the timing rules."""


class VideoError(RescueError):
    """Media that cannot be found or read; the message names the samples, files and options involved."""


# --- scoring ------------------------------------------------------------------------------------------------


class RatingsError(RescueError):
    """A ratings file that cannot be used; the message names file, line and field."""


class BertScoreError(RescueError):
    """The configured BERTScore backbone cannot be used; the message says why and what to do."""


class JudgeConfigError(RescueError, ValueError):
    """The judge was asked for something it cannot do (unknown task or scale)."""


class JudgeAnswerError(RescueError, ValueError):
    """A judge answer that is not a valid grade."""


# --- runs ---------------------------------------------------------------------------------------------------


class RunError(RescueError):
    """A run that cannot start or cannot be rescored; the message says which option or file is wrong."""


class RunInterrupted(RunError):
    """Ctrl-C: what was saved, and how to continue."""

    exit_code = EXIT_INTERRUPTED


class RunTerminated(RunInterrupted):
    """SIGTERM: what was saved, and how to continue."""

    exit_code = EXIT_TERMINATED


class BertScoreInterrupted(RescueError):
    """Ctrl-C during BERTScore: the run writes its results marked incomplete, then stops."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


class RunDirError(RescueError):
    """A run directory that cannot be read; the message names the file, line and field."""


class ArchiveError(RescueError):
    """An archive too large to read (a zip bomb: an inspect ``.eval`` log whose members inflate past rescue's limits,
    or hold too many entries), or not a readable archive; the message names the file, the member and the limit."""


class InspectLogError(RescueError):
    """An inspect log that cannot be read as a RESCUE-Bench run; the message names the file and field."""


class ThreadsError(RescueError):
    """``RESCUE_THREADS`` (how many threads rescue's libraries may start) holds no positive whole number; the
    message names the variable and its value."""


class BaselineError(RescueError):
    """An unknown baseline, or a baseline asked for a task it does not apply to."""


class SuiteError(RescueError):
    """A suite file that cannot be read; the message names the file and the field."""


class BenchError(RescueError):
    """An inspect task option rescue cannot run with; the message names the task parameter."""


# --- reports and exports ------------------------------------------------------------------------------------


class ReportError(RescueError):
    """A run directory that cannot be reported on; the message names the file, line and field."""


class ComparabilityError(ReportError):
    """The runs of one report differ in data, options, scorers, gold or coverage."""


class ExportError(RescueError):
    """An export that cannot be written (a missing extra, nothing to export)."""


class BundleError(RescueError):
    """A submission bundle that cannot be written or read (``rescue submit``, ``rescue verify``): the message names
    the file, member and field."""


class LeaderboardError(RescueError):
    """A leaderboard folder or site that cannot be read or written, or a bundle it refuses (``rescue leaderboard``)."""


class NotVerified(RescueError):
    """``rescue verify`` ran its checks and at least one failed: the verdict says which."""

    exit_code = EXIT_NOT_VERIFIED


# --- build and review ---------------------------------------------------------------------------------------


class BuildInputError(RescueError):
    """Every input problem of a build at once (the first 30 listed); nothing was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        head = "\n".join(problems[:30])
        more = f"\n... and {len(problems) - 30} more" if len(problems) > 30 else ""
        super().__init__(f"{len(problems)} input problem(s), nothing was written:\n{head}{more}")


class DatabaseError(RescueError):
    """The --db URL cannot be used; the message says why."""


class StoredValueError(DatabaseError):
    """A value the review database holds that rescue did not store (edited by hand or by another program): not
    JSON, nested past reason, a number no field holds, or not the kind of value its column keeps; the message
    names the table, column and row. The web app answers 500 with it; a command exits 2."""


class ReviewError(RescueError, ValueError):
    """A write that makes no sense (unknown user, bad role...); the message says why."""


class AccountDisabled(ReviewError):
    """The right password for an account an admin disabled."""


class AnswerLocked(ReviewError):
    """An answer to a benchmark instance after its person was shown what it hides (the no-look-ahead protocol,
    docs/human.md): refused, the stored answer stays. ``revealed_by`` is the instance whose page showed it."""

    def __init__(self, message: str, revealed_by: str, at: str):
        super().__init__(message)
        self.revealed_by = revealed_by
        self.at = at


class Conflict(RescueError):
    """A save over a newer version; ``current`` is the row as it now stands."""

    def __init__(self, current: Mapping[str, Any]):
        super().__init__("the row changed since it was loaded")
        self.current = current


class LayoutConflict(Conflict):
    """A cut started from an older cut of the copy (or from an older version of a row it touches)."""

    def __init__(self, current: Mapping[str, Any], layout: int):
        super().__init__(current)
        self.layout = layout


class FieldProblem(TypedDict):
    """One reason an edit cannot be saved: the full field path and what is wrong, with the rule broken, the row and
    the key a person acknowledges a warning by, where they apply (the 422 answers carry these as they are)."""

    field: str
    message: str
    rule: NotRequired[str]
    row_index: NotRequired[int | None]
    key: NotRequired[str]


class FieldError(RescueError, ValueError):
    """Edits that cannot be saved; ``problems`` are :class:`FieldProblem` ``{"field", "message"}``, field paths full."""

    def __init__(self, problems: list[FieldProblem]):
        super().__init__("; ".join(f"{p['field']}: {p['message']}" for p in problems))
        self.problems = problems


class UnstorableBody(RescueError):
    """A request body holding what no database or answer can carry (a lone surrogate, NaN or Infinity): answered
    422 naming each place before the route runs, so nothing of it is stored. Not a ValueError, so that pydantic
    passes it through instead of wrapping it in its own validation error (whose echo of the input could not be sent)."""

    def __init__(self, problems: list[dict[str, str]]):
        super().__init__("; ".join(f"{p['field']}: {p['message']}" for p in problems))
        self.problems = problems


class CutError(RescueError, ValueError):
    """A cut that cannot be made; ``field`` names what is wrong, for the 422 answer."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class LoginRequired(RescueError):
    """Raised by page dependencies: the app answers with a redirect to the login page."""

    def __init__(self, next_url: str):
        super().__init__(f"log in first (then {next_url})")
        self.next_url = next_url


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_disk_full(exc: BaseException) -> bool:
    """An OSError of a full disk or quota, a file over the size limit, or SQLite's "database or disk is full"."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return True
    text = str(exc)
    return type(exc).__name__ in ("OperationalError", "DatabaseError", "DiskFull") and (
        "disk is full" in text or "No space left on device" in text)


def environment_error(exc: BaseException) -> str:
    """One line for an error of the machine (not of the input or of rescue): what failed, where, and that what
    was written before is intact (every file is written whole or not at all, answers are committed one by one)."""
    where = getattr(exc, "filename", None)
    place = f"{where}: " if where else ""
    if is_disk_full(exc):
        return (f"{place}the disk is full (or its quota or the file size limit is reached): {exc}. Nothing was "
                "lost: every file written before is whole, answers already received are kept in the cache. Free "
                "some space and run the same command again.")
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"{place}{reason}. Nothing was lost: every file written before is whole; fix this and run the command again."
