"""Suites: a set of models with the run settings that go with them, in a TOML file ``rescue run --suite`` reads.

A suite is ``[suite]`` (name, description, source), ``[run]`` (``rescue run`` settings by their option names:
tasks, temperature, json_mode, batch_size, judges, judge_scale, ...) and ``[[models]]`` (spec, the paper
model it stands for, where its id comes from, optional per-model ``settings``). ``paper`` is the packaged
suite of the paper's ten models; any other value is a path to a user's file.

:func:`apply_suite` puts a suite onto a :class:`~rescue.engine.runner.RunConfig`: the suite's models replace
the default ones, its ``[run]`` values replace the defaults of options the command line did not set, and
its per-model settings sit under those of ``--model-settings``. :func:`key_status` says, offline, which
API key each model and judge needs and whether it is set.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rescue.errors import SuiteError as SuiteError

__all__ = [
    "PACKAGED",
    "KeyStatus",
    "Suite",
    "SuiteError",
    "SuiteModel",
    "apply_suite",
    "key_status",
    "load_suite",
    "print_plan",
    "settings_lines",
]

PACKAGED = ("paper",)


@dataclass(frozen=True)
class SuiteModel:
    """One model of a suite: its spec, its name in the paper, where it comes from, and its settings."""

    spec: str
    paper: str | None = None
    source: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    """A suite of models to run together (e.g. the paper's), with the run options it sets."""

    name: str
    origin: str
    models: list[SuiteModel]
    run: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""


def _read(name_or_path: str) -> tuple[str, str]:
    if name_or_path in PACKAGED:
        return resources.files(__name__).joinpath(f"{name_or_path}.toml").read_text(encoding="utf-8"), name_or_path
    path = Path(name_or_path)
    if not path.is_file():
        raise SuiteError(f"--suite {name_or_path}: no such file (packaged suites: {', '.join(PACKAGED)})")
    return path.read_text(encoding="utf-8"), str(path)


def load_suite(name_or_path: str) -> Suite:
    """The suite called ``name_or_path`` (a packaged suite's name or a TOML file); SuiteError when it cannot be read."""
    text, origin = _read(name_or_path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"{origin}: {exc}") from None
    head = data.get("suite") or {}
    run = data.get("run") or {}
    if not isinstance(head, dict) or not isinstance(run, dict):
        raise SuiteError(f"{origin}: [suite] and [run] must be tables")
    entries = data.get("models")
    if not isinstance(entries, list) or not entries:
        raise SuiteError(f"{origin}: field models: expected one [[models]] table per model")
    models = []
    for number, entry in enumerate(entries, start=1):
        spec = entry.get("spec") if isinstance(entry, dict) else None
        if not isinstance(spec, str) or not spec.strip():
            raise SuiteError(f"{origin}: models[{number}].spec: a model spec such as openai/gpt-4o is required")
        settings = entry.get("settings") or {}
        if not isinstance(settings, dict):
            raise SuiteError(f"{origin}: models[{number}].settings: expected a table of generation settings")
        models.append(SuiteModel(spec.strip(), entry.get("paper"), str(entry.get("source") or ""), dict(settings)))
    return Suite(str(head.get("name") or Path(origin).stem), origin, models, dict(run),
                 str(head.get("description") or ""), str(head.get("source") or ""))


def apply_suite(config: Any, suite: Suite, *, explicit: Collection[str] = ()) -> Any:
    """``config`` with the suite's models and settings; fields named in ``explicit`` (set on the command
    line) keep their value. Unknown ``[run]`` keys are an error naming the file."""
    if config.models:
        raise SuiteError(f"--suite {suite.origin} names its own models: leave out --model (or copy the suite "
                         "file and edit its [[models]])")
    known = set(type(config).model_fields)
    unknown = sorted(set(suite.run) - known)
    if unknown:
        raise SuiteError(f"{suite.origin}: [run]: unknown setting(s) {', '.join(unknown)}")
    changes: dict[str, Any] = {k: v for k, v in suite.run.items() if k not in explicit}
    changes["models"] = [m.spec for m in suite.models]
    settings = {m.spec: dict(m.settings) for m in suite.models if m.settings}
    for spec, own in (config.model_settings or {}).items():
        settings[spec] = {**settings.get(spec, {}), **own}
    changes["model_settings"] = settings
    # Validated again as a whole: a suite's [run] values get the same checks as command-line options.
    return type(config).model_validate({**config.model_dump(), **changes})


def settings_lines(suite: Suite, config: Any, explicit: Collection[str] = ()) -> list[str]:
    """One line per ``[run]`` setting of ``suite``: the value ``config`` holds (as TOML writes it) and who gave it,
    ``(suite)`` or ``(command line)`` for a name in ``explicit``; plain text, not yet escaped for a terminal."""
    lines = ["Run settings (an option given on the command line wins):"] if suite.run else []
    for name in suite.run:
        origin = "command line" if name in explicit else "suite"
        lines.append(f"  {name} = {json.dumps(getattr(config, name), ensure_ascii=False, default=str)} ({origin})")
    return lines


@dataclass(frozen=True)
class KeyStatus:
    """Whether the API key a suite's model or judge needs is set, and why not when it cannot be told."""

    spec: str
    role: str  # "model" or "judge"
    key_env: str | None  # None: needs no key (a local server)
    present: bool
    error: str = ""  # the spec cannot be resolved at all


def key_status(specs: list[str], judges: list[str], *, base_url: str | None = None,
               api_key_env: str | None = None) -> list[KeyStatus]:
    """Which key each model and judge needs and whether it is set (environment or ./.env); asks nothing."""
    from rescue.llm import CredentialError, resolve_endpoint
    from rescue.llm._providers import load_dotenv_once

    load_dotenv_once()
    out = []
    for role, names in (("model", specs), ("judge", judges)):
        for spec in names:
            if spec.startswith(("baseline/", "local/")):
                out.append(KeyStatus(spec, role, None, True))
                continue
            try:
                endpoint = resolve_endpoint(spec, base_url=base_url if role == "model" else None,
                                            api_key_env=api_key_env if role == "model" else None, need_key=False)
            except CredentialError as exc:
                out.append(KeyStatus(spec, role, None, False, str(exc)))
                continue
            env = endpoint.key_env
            out.append(KeyStatus(spec, role, env, env is None or bool(os.environ.get(env, "").strip())))
    return out


def print_plan(console: Any, suite: Suite, config: Any, *, explicit: Collection[str] = ()) -> None:
    """What ``rescue run --suite S --dry-run`` prints before the request estimate: the models, where each id
    comes from, each ``[run]`` setting with the value the run uses and whether the suite or the command line
    (``explicit``) gave it, and the key each model and judge needs and whether it is set (the estimate then
    counts the judge's requests and cost too). Everything the suite file says is shown as text, never styled."""
    from rich.table import Table

    from rescue.display import terminal_text as shown

    console.print(f"[bold]Suite {shown(suite.name)}[/] ({shown(suite.origin)}): {shown(suite.description)}",
                  highlight=False, soft_wrap=True)
    if suite.source:
        console.print(f"Source: {shown(suite.source)}", highlight=False, soft_wrap=True)
    for line in settings_lines(suite, config, explicit):
        console.print(shown(line), highlight=False, soft_wrap=True)
    statuses = key_status(config.models, list(config.judges), base_url=config.base_url, api_key_env=config.api_key_env)
    papers = {m.spec: m for m in suite.models}
    table = Table(title="Models and keys", title_justify="left")
    for header in ("role", "model", "paper", "key", "set?"):
        table.add_column(header, no_wrap=header != "paper")
    for status in statuses:
        entry = papers.get(status.spec)
        key = status.error or (status.key_env or "none needed")
        table.add_row(shown(status.role), shown(status.spec), shown(entry.paper or "" if entry else ""), shown(key),
                      "yes" if status.present else "[bold red]MISSING[/]")
    console.print(table)
    for model in suite.models:
        if model.source:
            console.print(f"  {shown(model.spec)}: {shown(model.source)}", highlight=False, soft_wrap=True)
    missing = sorted({s.key_env for s in statuses if not s.present and s.key_env})
    if missing:
        console.print(f"[bold red]Missing keys:[/] {shown(', '.join(missing))} — set them in the environment or "
                      "./.env before a real run.", highlight=False, soft_wrap=True)
    else:
        console.print("Every key is set.", highlight=False)
