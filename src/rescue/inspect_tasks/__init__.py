"""RESCUE-Bench as inspect_ai tasks (the ``inspect`` extra), and inspect's logs read back as runs.

- :mod:`rescue.inspect_tasks.plan`: what one inspect task evaluates (samples, split, scenario, instances) and the
  run configuration it records, computed by the same functions ``rescue run`` uses; no inspect_ai import.
- :mod:`rescue.inspect_tasks.bench`: the inspect ``Task`` per RESCUE task (``inspect eval rescue/itp``), its
  ``Dataset``, ``Solver``, ``Scorer`` and metric; the entry point inspect loads. Imports inspect_ai.
- :mod:`rescue.runs.inspect_logs` reads their ``.eval`` logs back as runs (``rescue report``) and holds the
  metadata keys both sides use.

Nothing here copies task logic: prompts, parsing, scores and metrics are the tasks' own (``rescue.tasks``).
"""

from __future__ import annotations

# Its face is its modules; ``bench`` imports inspect_ai, so nothing is imported here.
__all__ = [
    "bench",
    "plan",
]
