"""RESCUE-Bench as inspect_ai tasks (the ``inspect`` extra), and inspect's logs read back as runs.

- :mod:`rescue.inspect_tasks.plan`: what one inspect task evaluates (samples, split, scenario, instances) and the
  run configuration it records, computed by the same functions ``rescue run`` uses; no inspect_ai import.
- :mod:`rescue.inspect_tasks.bench`: the inspect ``Task`` per RESCUE task (``inspect eval rescue/itp``), its
  ``Dataset``, ``Solver``, ``Scorer`` and metric; the entry point inspect loads. Imports inspect_ai.
- :mod:`rescue.inspect_tasks.logs`: ``.eval`` logs of these tasks as prediction records and stored configs, for
  ``rescue report``; imports inspect_ai only when a log is read.

Nothing here copies task logic: prompts, parsing, scores and metrics are the tasks' own (``rescue.tasks``).
"""

from __future__ import annotations

EXTRA = "inspect"
EXTRA_HINT = "pip install 'rescue-bench[inspect]'"
# Task metadata key (the stored run configuration) and score metadata key (the prediction record).
CONFIG_KEY = "rescue"
RECORD_KEY = "rescue_record"
GRADER = "grader"  # the inspect model role that grades ER and VP with the task's judge rubric

__all__ = ["CONFIG_KEY", "EXTRA", "EXTRA_HINT", "GRADER", "RECORD_KEY"]
