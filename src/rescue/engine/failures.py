"""How a run words what went wrong: one line per model left without answers, per judge that could not grade,
an endpoint alarm as soon as one is unreachable, and the ``stopped`` reason results.json carries."""

from __future__ import annotations

from typing import Any

from rescue.engine.config import RunError
from rescue.engine.outcome import PairResult
from rescue.engine.progress import ProgressDisplay
from rescue.data.text import visible_text
from rescue.llm import ReliableModel
from rescue.tasks.base import PredictionRecord


def _first_error(errors: list[str]) -> str:
    # "not requested: ..." only repeats the cause; the first real answer from the endpoint names it.
    real = [e for e in errors if not e.startswith("not requested")]
    return visible_text((real or errors)[0], max_length=300)


def _error_class(error: str) -> str:
    head, sep, _ = error.partition(":")
    return head.strip() if sep and " " not in head.strip() else "request_error"


def request_error_summary(name: str, endpoint: str, records: list[PredictionRecord]) -> str | None:
    """One line about the instances of one model left without an answer, or None when every one has one."""
    errors = [r.error for r in records if r.status == "request_error"]
    if not errors:
        return None
    first = _first_error(errors)
    what = "every request failed" if len(errors) == len(records) else \
        f"{len(errors)} of {len(records)} instances have no answer"
    return f"{terminal_safe(name)}: {what} at {terminal_safe(endpoint)} ({_error_class(first)}): {first}"


def judge_failures(records: list[PredictionRecord]) -> int:
    """Grades a judge could not give (requests that failed, answers that never validated, refusals)."""
    return sum(1 for r in records if r.judge is not None
               for grade in r.judge.judges.values() if grade.status == "failed")


def judge_error_summary(name: str, endpoint: str, records: list[PredictionRecord]) -> str | None:
    """One line about the grades one judge could not give: its requests failed, it refused, or its answers
    never validated. Any of them leaves the run incomplete, as a request error of the evaluated model does."""
    asked = 0
    errors: list[str] = []
    for record in records:
        grade = None if record.judge is None else record.judge.judges.get(name)
        if grade is None or grade.status == "minimum":
            continue
        asked += 1
        if grade.status == "failed":
            errors.append(grade.error)
    if not errors:
        return None
    first = _first_error([e.removeprefix("request_error:").strip() for e in errors])
    kind = "invalid_answer" if first.startswith("invalid answer") else _error_class(first)
    what = "every grade failed" if len(errors) == asked else f"{len(errors)} of {asked} grades failed"
    line = f"judge {terminal_safe(name)}: {what} at {terminal_safe(endpoint)} ({kind}): {first}"
    if any(not e.startswith("request_error") for e in errors):
        # Answers the judge gave are cached: only --retry-errors asks for them again.
        line += " (add --retry-errors to ask the judge again for the grades it could not give)"
    return line


def terminal_safe(text: str) -> str:
    """``text`` (a model name, an endpoint, an error) safe to print: control characters escaped, 200 characters."""
    return visible_text(text, max_length=200)


def endpoint_alarm(display: ProgressDisplay, endpoints: dict[str, str]) -> Any:
    """A run.log listener that names an unreachable or refusing endpoint on the terminal at once, once per model."""
    told: set[str] = set()

    def listen(event: str, fields: dict[str, Any]) -> None:
        model = str(fields.get("model", ""))
        if model in told or event not in ("retry", "fatal", "failure"):
            return
        error = str(fields.get("error", ""))
        kind = str(fields.get("error_class") or _error_class(error))
        if event == "retry" and kind != "connection":
            return
        if event == "failure" and fields.get("status") != "request_error":
            return
        told.add(model)
        where = endpoints.get(model, model)
        then = "retrying" if event == "retry" else "its remaining requests are not sent" if event == "fatal" else \
            "this request failed"
        display.warn(f"{terminal_safe(model)} at {terminal_safe(where)}: {kind}: "
                     f"{visible_text(error, max_length=200)} ({then})")

    return listen


def credential_error_for_judge(exc: Exception, spec: str) -> RunError:
    """A credential error worded for ``--judge``: the provider layer words its errors for ``--model``, and a
    judge's key is set with other options."""
    text = str(exc).replace(f"--model {spec!r}", f"--judge {spec!r}").replace("--api-key-env", "--judge-api-key-env")
    return RunError(text)


def stop_reason(first: list[str], reliable: dict[str, ReliableModel], pairs: list[PairResult],
                endpoints: dict[str, str], judge_endpoints: dict[str, str]) -> str | None:
    """Why a run is incomplete, one clause per cause (``first``: an interruption, a spent --max-cost), then a
    model the provider stopped, instances left without an answer and grades a judge could not give; None when
    the run is complete."""
    parts = list(first)
    parts += [f"{terminal_safe(s)}: {terminal_safe(m.fatal)}" for s, m in reliable.items() if m.fatal]
    records_by_model: dict[str, list[PredictionRecord]] = {}
    for pair in pairs:
        records_by_model.setdefault(pair.model, []).extend(pair.records)
    for spec, model_records in records_by_model.items():
        parts.append(request_error_summary(spec, endpoints.get(spec, spec), model_records) or "")
    judged = [r for p in pairs for r in p.records if r.judge]
    parts += [judge_error_summary(name, endpoint, judged) or "" for name, endpoint in judge_endpoints.items()]
    return "; ".join(dict.fromkeys(p for p in parts if p)) or None
