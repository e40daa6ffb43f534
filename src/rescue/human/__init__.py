"""The human reference: people take the benchmark's task instances in the browser, and their answers become a run.

A benchmark project (``rescue review init DIR --benchmark``) is served inside the review tool's app (accounts,
sessions, CSRF, audit log) but is its own package: it alone needs the tasks, the model layer's answer type and
the video context, so the verification tool (:mod:`rescue.review`) needs none of them.

- :mod:`rescue.human.benchmark`: the project (``benchmark.json``), each instance's page, answers checked;
- :mod:`rescue.human.store`: assignment, answers and their timing in the review database;
- :mod:`rescue.human.app`: the web app (pages and ``/api/bench/...`` routes);
- :mod:`rescue.human.export`: people as systems of a run, time and agreement (``human.md``);
- :mod:`rescue.human.shapes`: the dicts they pass and return.
"""

# The face is its modules; nothing is imported here, so `rescue review --help` loads none of them.
__all__ = [
    "app",
    "benchmark",
    "export",
    "shapes",
    "store",
]
