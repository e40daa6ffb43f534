"""Shared by the benchmark project's tests (issue #38): a project on the demo data, the leak scan every page and API
answer goes through, and a scripted person's answer in each task's shape.

The leak scan is the prompt leak test's (tests/llm/test_batch_leaks.py) applied to what the browser gets: the row an
instance hides (its own for RPP/STP/SSP, the next one for ITP) and every later row must not show, as a row record
or as its words (six words or more, raw or JSON-escaped); no gold phrase of ER/VP (four words or more) may show;
and no gold-bearing field of a row (the data model's fields that a prompt never renders) may appear as a key.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from review_helpers import Client, make_app

from rescue.data.models import Row
from rescue.data.reading import demo_path
from rescue.human.benchmark import Benchmark, init_benchmark
from rescue.tasks import TASKS, get_task
from rescue.tasks.base import Instance, Task
from rescue.tasks.render import render_row

BENCH_USERS = {"ann": "annotator", "bob": "annotator", "cat": "annotator", "root": "admin"}
ALL_TASKS = list(TASKS)


def _gold_fields() -> set[str]:
    """The row fields no prompt renders in any mode (times are rendered as one timestamp)."""
    from rescue.data.loading import load_samples

    row = load_samples(demo_path())[0].rows[0]
    return set(Row.model_fields) - set(render_row(row, "video+cues", participants=["x"])) - {"start_time", "end_time"}


GOLD_FIELDS = _gold_fields()


def make_bench(root: Path, data: Path | None = None, tasks: list[str] | None = None, k: int = 2,
               sample: int | None = None) -> Path:
    init_benchmark(root, data or demo_path(), tasks or ALL_TASKS, k, sample=sample)
    return root


def bench_app(root: Path, db: Path, people: list[str] | None = None, k: int | None = None):  # type: ignore[no-untyped-def]
    from rescue.human.store import assign

    app = make_app(root, db, BENCH_USERS)
    with app.state.sessions() as session:
        assign(session, "test", app.state.project, k, people or ["ann", "bob"])
    return app


def _hidden_from(task: Task, instance: Instance) -> int:
    hidden = task.declaration.hidden
    return instance.row_index + 1 if hidden == "next_row" else instance.row_index if hidden == "row" else instance.row_index + 1


def page_leaks(task: Task, instance: Instance, text: str) -> list[str]:
    """What of the instance's hidden rows or gold shows in ``text`` (a page or an API answer)."""
    found = []
    first = _hidden_from(task, instance)
    for row in instance.sample.rows:
        if row.row_index < first:
            continue
        words = row.dialogue_cleaned.strip()
        if len(words.split()) >= 6 and (words in text or json.dumps(words, ensure_ascii=False)[1:-1] in text):
            found.append(f"row {row.row_index}'s words")
        if re.search(rf'"row_index":\s*{row.row_index}\b', text):
            found.append(f"row {row.row_index}'s record")
    scorer = task.declaration.bertscore
    if scorer is not None:
        found += [f"gold phrase {p!r}" for p in scorer.texts(instance.gold) if len(p.split()) >= 4 and p in text]
    found += [f"field {name}" for name in sorted(GOLD_FIELDS | {"gold"}) if f'"{name}"' in text]
    return found


def every_leak(bench: Benchmark, text: str) -> list[str]:
    """Leaks of any instance of the project (for pages that are about no one instance)."""
    return [f"{task}/{n}: {leak}" for task, n in bench.keys()
            for leak in page_leaks(get_task(task), bench.instance(task, n), text)]


class ScanningClient(Client):
    """A logged-in client that runs the leak scan on every answer it gets (pages and API alike)."""

    def __init__(self, app: Any, name: str):
        super().__init__(app, name)
        self.bench: Benchmark = app.state.project
        self.scanned = 0

    def _scan(self, url: str, answer: Any) -> Any:
        match = re.search(r"/(?:take|api/bench/items)/([a-z]+)/(\d+)", url)
        text = answer.text
        if match and match.group(1) in self.bench.instances and 1 <= int(match.group(2)) <= len(self.bench.instances[match.group(1)]):
            task, number = match.group(1), int(match.group(2))
            leaks = page_leaks(get_task(task), self.bench.instance(task, number), text)
        else:
            leaks = every_leak(self.bench, text)
        assert not leaks, f"{url}: {leaks}"
        self.scanned += 1
        return answer

    def get(self, url: str, **kw: Any):  # type: ignore[no-untyped-def]
        return self._scan(url, super().get(url, **kw))

    def write(self, method: str, url: str, body: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        return self._scan(url, super().write(method, url, body, **kw))


def scripted_answer(item: dict[str, Any], rng: random.Random) -> Any:
    """A scripted person's answer to an instance's page, in the task's shape (seeded choices, not judgement)."""
    labels = [entry["label"] for entry in item["labels"]]
    rng.shuffle(labels)
    kind = item["answer_kind"]
    if kind == "label":
        return labels[0]
    if kind == "ranking":
        return labels[:item["rank"]]
    if kind == "emotion":
        return {"emotion": rng.choice(["feels unheard and frustrated", "anxious and defensive", "hurt"]),
                "intensity": rng.randint(3, 8)}
    target = rng.choice([p for p in item["people"] if p != item["speaker"]] or item["people"])
    return [{"source": item["speaker"], "target": target,
             "viewpoint": rng.choice(["does not listen to me", "is trying hard", "blames me for everything"])}]


def answer_queue(client: Client, rng: random.Random, limit: int | None = None) -> int:
    """Answer the client's queue (up to ``limit`` instances) as a scripted person; returns how many."""
    done = 0
    for entry in client.get("/api/bench/queue").json()[:limit]:
        url = f"/api/bench/items/{entry['task']}/{entry['number']}"
        item = client.get(url).json()
        answer = client.write("PUT", url + "/answer", {"value": scripted_answer(item, rng), "version": item["version"]})
        assert answer.status_code == 200, answer.text
        done += 1
    return done
