"""The task registry: tasks register themselves, and discovery imports the modules that hold them.

A task module registers its task with :func:`register` (a class decorator, or a call on an instance)::

    @register
    class MyTask(ClosedTask):
        declaration = Declaration(name="mytask", title="My task", answer_key="label", ...)

:func:`discover` imports every module of the ``rescue.tasks`` package (a new task there is one new file)
and every entry point of the ``rescue.tasks`` group, so a package outside rescue adds a task with::

    [project.entry-points."rescue.tasks"]
    mytask = "mypackage.mytask"       # a module that registers its task when imported

An entry point may also name a task class or object, which is registered as it is loaded. :data:`TASKS`
holds the registered tasks in their declared order (the paper's for its six), then in registration order.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar, overload

from rescue.errors import TaskRegistryError as TaskRegistryError
from rescue.tasks.base import Task

ENTRY_POINT_GROUP = "rescue.tasks"
TASKS: dict[str, Task] = {}
_ARRIVAL: dict[str, int] = {}  # registration order, the tie-break after the declared order

T = TypeVar("T")


@overload
def register(task: type[T]) -> type[T]: ...


@overload
def register(task: T) -> T: ...


def register(task: Any) -> Any:
    """Add a task to :data:`TASKS` under its declared name and return what was given.

    Given a class (the decorator form) it registers an instance of it. Registering the same kind of task
    again (a module imported twice) replaces it; a different task under a taken name is an error.
    """
    instance = task() if isinstance(task, type) else task
    if not isinstance(instance, Task):
        raise TaskRegistryError(f"{task!r} is not a task: it lacks part of rescue.tasks.base.Task")
    name = instance.declaration.name
    if not name or name != name.strip().lower():
        raise TaskRegistryError(f"task name {name!r}: use a lower-case name without spaces, e.g. 'itp'")
    existing = TASKS.get(name)
    if existing is not None and _qualname(existing) != _qualname(instance):
        raise TaskRegistryError(f"two tasks named {name!r}: {_qualname(existing)} and {_qualname(instance)}")
    _ARRIVAL.setdefault(name, len(_ARRIVAL))
    TASKS[name] = instance
    _sort()
    return task


def unregister(name: str) -> Task | None:
    """Remove a task from the registry (tests that add a throwaway task take it out again)."""
    _ARRIVAL.pop(name, None)
    return TASKS.pop(name, None)


def _qualname(task: object) -> str:
    kind = type(task)
    return f"{kind.__module__}.{kind.__qualname__}"


def _sort() -> None:
    ordered = sorted(TASKS.items(), key=lambda item: (item[1].declaration.order, _ARRIVAL[item[0]]))
    TASKS.clear()  # the same dict object: every `from rescue.tasks import TASKS` sees the change
    TASKS.update(ordered)


class TaskNames(Sequence[str]):
    """The registered task names in registry order, read live (a task registered later is in it)."""

    def __getitem__(self, index: Any) -> Any:
        return tuple(TASKS)[index]

    def __len__(self) -> int:
        return len(TASKS)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(TASKS))

    def __contains__(self, name: object) -> bool:
        return name in TASKS

    def __eq__(self, other: object) -> bool:
        return tuple(TASKS) == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(tuple(TASKS))

    def __repr__(self) -> str:
        return repr(tuple(TASKS))


TASK_NAMES: Sequence[str] = TaskNames()


def discover(package: str = "rescue.tasks") -> None:
    """Import every module of ``package`` and load every ``rescue.tasks`` entry point; the task modules
    register themselves as they are imported. An import that fails is raised, never hidden."""
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__, f"{package}."):
        importlib.import_module(info.name)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        _load_entry_point(point)


def _load_entry_point(point: EntryPoint) -> None:
    try:
        loaded = point.load()
    except Exception as exc:
        raise TaskRegistryError(f"task plugin {point.name!r} ({point.value}, entry point group "
                                f"{ENTRY_POINT_GROUP!r}) cannot be loaded: {type(exc).__name__}: {exc}") from exc
    if isinstance(loaded, type) or isinstance(loaded, Task):
        register(loaded)
    # A module registers its tasks itself, as it is imported.
