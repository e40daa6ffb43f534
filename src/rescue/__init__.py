"""rescue: RESCUE-Bench end to end, from annotated therapy sessions to a leaderboard.

The notebook API (everything in ``__all__``)::

    import rescue
    samples = rescue.load()                                  # the bundled demo data, or rescue.load("data.jsonl")
    itp = rescue.get_task("itp")
    instances = itp.build(samples)                           # what a model is asked
    messages = itp.render(instances[:1], rescue.RenderOptions())
    result = rescue.evaluate(["baseline/majority"], tasks=["itp", "rpp"], data=samples)
    result.to_pandas()                                       # one row per model, task and scope

:func:`evaluate` works in a plain script and inside a running event loop (Jupyter); it writes nothing unless
``out=`` names a run directory (then it is a ``rescue run``: cache, resume, results.json, predictions.jsonl).
Heavy modules are imported only when a function needs them, so ``import rescue`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue._version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from rescue.data.models import Sample
    from rescue.runs.results import RunResults
    from rescue.llm import Model
    from rescue.tasks.base import PredictionRecord, RenderOptions, Task

__all__ = [
    "Evaluation",
    "RenderOptions",
    "RunResults",
    "__version__",
    "evaluate",
    "evaluate_async",
    "get_task",
    "load",
]


def load(path: str | Path | None = None) -> list[Sample]:
    """Read and validate samples: a ``.jsonl`` file, a folder of them, or per-sample ``.json`` files; None: the
    bundled demo data. Bad data raises :class:`rescue.errors.DataError` naming file, line and field."""
    from rescue.data.loading import load_samples

    return load_samples(path)


def get_task(name: str) -> Task:
    """The task called ``name`` in any case (``itp``, ``RPP`` ...): ``build``, ``render``, ``parse``, ``aggregate``."""
    from rescue.tasks import get_task as lookup

    return lookup(name)


@dataclass
class Evaluation:
    """What :func:`evaluate` returns: the typed ``results.json`` and every prediction record."""

    results: RunResults
    records: list[PredictionRecord] = field(repr=False)
    complete: bool
    stopped: str | None = None
    out: Path | None = None  # the run directory, when ``out=`` was given

    def to_pandas(self, *, samples: bool = False) -> pd.DataFrame:
        """Metrics: one row per (model, task, scope), every metric a column; ``samples`` adds per-sample rows."""
        return self.results.to_pandas(samples=samples)

    def records_frame(self) -> pd.DataFrame:
        """Every prediction record as a row (model, task, instance, gold, prediction, status, scores ...)."""
        import pandas as pd

        return pd.DataFrame([r.model_dump() for r in self.records])

    def metrics(self, model: str, task: str, scope: str = "all") -> dict[str, Any]:
        """The stored metrics of ``model`` on ``task`` in ``scope`` (empty when there are none)."""
        return self.results.metrics(model, task, scope)


def _config(models: list[str], out: str | Path | None, tasks: list[str] | None, data: Any,
            options: dict[str, Any]) -> Any:
    from rescue.engine.config import RunConfig

    fields: dict[str, Any] = {"out": str(out) if out is not None else ".", "models": models, "quiet": True,
                              **options}
    if tasks is not None:
        fields["tasks"] = tasks
    if isinstance(data, str | Path):
        fields["data"] = str(data)
    return RunConfig(**fields)


def _split_models(models: Any) -> tuple[list[str], list[Any]]:
    if models is None:
        return [], []
    if isinstance(models, str) or not isinstance(models, list | tuple):
        models = [models]
    specs = [m for m in models if isinstance(m, str)]
    objects = [m for m in models if not isinstance(m, str)]
    return specs, objects


async def evaluate_async(
    models: str | Model | list[str | Model] | None = None,
    *,
    tasks: list[str] | None = None,
    data: str | Path | list[Sample] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> Evaluation:
    """Evaluate ``models`` (specs such as ``"openai/gpt-4o-mini"``, ``"baseline/majority"``, or model objects
    of your own with ``name`` and ``complete``) on ``tasks`` (default: every registered task) and ``data`` (a path, samples
    from :func:`load`, or None for the demo data). ``options`` are ``rescue run``'s options by their
    :class:`~rescue.engine.config.RunConfig` names (``limit_samples=5``, ``base_url=...``, ``bertscore=False``).
    Nothing is written unless ``out`` names a run directory."""
    from rescue.engine.runner import run_async

    specs, objects = _split_models(models)
    config = _config(specs, out, tasks, data, options)
    samples = list(data) if isinstance(data, list | tuple) else None
    outcome = await run_async(config, write=out is not None, models=objects, samples=samples)
    return Evaluation(outcome.typed, outcome.records, outcome.complete, outcome.stopped,
                      Path(out) if out is not None else None)


def evaluate(
    models: str | Model | list[str | Model] | None = None,
    *,
    tasks: list[str] | None = None,
    data: str | Path | list[Sample] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> Evaluation:
    """:func:`evaluate_async` for code without an event loop, and for Jupyter, whose loop is already running:
    there the evaluation runs on a loop of its own in a helper thread and this call waits for it."""
    import asyncio  # here, not at the top: `import rescue` (and `rescue --help`) stays light
    import threading

    coroutine = evaluate_async(models, tasks=tasks, data=data, out=out, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the caller's thread as it is
            box["error"] = exc

    thread = threading.Thread(target=work, name="rescue-evaluate", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:
    # Types named in __all__, imported on first use so that `import rescue` stays light.
    if name == "RenderOptions":
        from rescue.tasks.base import RenderOptions

        return RenderOptions
    if name == "RunResults":
        from rescue.runs.results import RunResults

        return RunResults
    raise AttributeError(f"module 'rescue' has no attribute {name!r}")
