"""No look-ahead (issue #43 item 1): a person never answers an instance after a page showed them what it hides, and
cannot change an answer once it was shown; the server enforces it (docs/human.md, rescue.human.store).

Whether a page reveals an instance is decided here independently of the server's rule: by the leak scan of
tests/bench_helpers.py on the text of a page of the same sample (the instance's hidden and later rows, as records
or words, its gold phrases), and for a page that gives facts of its own turn (RPP's target speaker, SSP's support target) by that
turn being one the instance hides.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ALL_TASKS, ScanningClient, bench_app, every_leak, make_bench, page_leaks, scripted_answer

from rescue.human.benchmark import Benchmark, hidden_from
from rescue.human.store import BenchAnswer, counted_answers
from rescue.tasks import get_task

PEOPLE = ["ann", "bob", "cat"]


@pytest.fixture
def app(tmp_path: Path) -> Any:
    application = bench_app(make_bench(tmp_path / "bench"), tmp_path / "review.db", PEOPLE, 2)
    yield application
    application.state.engine.dispose()


def url_of(key: tuple[str, int]) -> str:
    return f"/api/bench/items/{key[0]}/{key[1]}"


def revealed_by(bench: Benchmark, page: tuple[tuple[str, int], str], key: tuple[str, int]) -> bool:
    """Whether the page (its key and its text, as the browser got it) shows anything ``key`` hides."""
    (task, number), text = page
    if (task, number) == key:
        return False
    target, shown = bench.instance(*key), bench.instance(task, number)
    if shown.sample.sample_id != target.sample.sample_id:  # another session (its row numbers are its own)
        return False
    if page_leaks(get_task(key[0]), target, text):
        return True
    gives_its_turn = get_task(task).declaration.hidden == "row" and bool(json.loads(text).get("given"))
    return gives_its_turn and shown.row_index >= hidden_from(get_task(key[0]), target)


@pytest.mark.slow
def test_whole_queues_in_order_and_going_back_count_no_answer_after_its_reveal(app):
    """Three people take their whole queue in order (every answer accepted), then go back over it and try to change
    every answer: exactly the answers a later page revealed are refused (423), the rest change; nothing counted was
    given after its reveal, by the server's count and by the log of what each person was shown."""
    bench: Benchmark = app.state.project
    refused_total = changed_total = 0
    for n, name in enumerate(PEOPLE):
        person = ScanningClient(app, name)
        rng = random.Random(n)
        queue = [(q["task"], q["number"]) for q in person.get("/api/bench/queue").json()]
        assert {t for t, _ in queue} == set(ALL_TASKS)  # every person gets every task
        events: list[tuple[str, tuple[str, int], str]] = []  # ("view", key, text) or ("answer", key, "")
        versions: dict[tuple[str, int], int] = {}
        for key in queue:
            answer = person.get(url_of(key))
            item = answer.json()
            assert item["locked"] is None and item["shown"], (name, key, item["locked"])
            events.append(("view", key, answer.text))
            saved = person.write("PUT", url_of(key) + "/answer", {"value": scripted_answer(item, rng), "version": 0})
            assert saved.status_code == 200, saved.text
            versions[key] = saved.json()["version"]
            events.append(("answer", key, ""))
        views = [(key, text) for kind, key, text in events if kind == "view"]
        for key in reversed(queue):  # going back: every answer changed, or refused
            item = person.get(url_of(key)).json()
            expected = any(revealed_by(bench, view, key) for view in views)
            changed = person.write("PUT", url_of(key) + "/answer", {"value": scripted_answer(item, rng),
                                                                    "version": versions[key]})
            if expected:
                assert changed.status_code == 423 and item["locked"] is not None, (name, key, changed.text)
                assert changed.json()["locked"]["by"] == item["locked"]["by"]
                refused_total += 1
            else:
                assert changed.status_code == 200 and item["locked"] is None, (name, key, changed.text)
                events.append(("answer", key, ""))
                changed_total += 1
        # The log: no accepted answer after a page that revealed it.
        for at, (kind, key, _text) in enumerate(events):
            if kind == "answer":
                before = [(k, t) for kind2, k, t in events[:at] if kind2 == "view"]
                assert not any(revealed_by(bench, view, key) for view in before), (name, key)
    assert refused_total and changed_total  # both happen on the demo data
    with app.state.sessions() as db:
        counted, late = counted_answers(db, bench)
    assert late == 0 and len(counted) == sum(len(person) for person in [
        ScanningClient(app, name).get("/api/bench/queue").json() for name in PEOPLE])


def test_a_page_that_would_lock_an_unanswered_instance_says_so_and_that_instance_shows_nothing(app):
    """Jumping ahead: the reveals route names the open instances a page would lock before it is shown; once shown,
    such an instance shows nothing of its prompt and takes no answer, and it counts as not answered."""
    bench: Benchmark = app.state.project
    ann = ScanningClient(app, "ann")
    queue = [(q["task"], q["number"]) for q in ann.get("/api/bench/queue").json()]
    # The first instance of the queue that a later one reveals, and that later one.
    early, late = next((a, b) for i, a in enumerate(queue) for b in queue[i + 1:] if bench.reveals(b, a))
    ahead = ann.get(url_of(late) + "/reveals").json()
    assert f"{early[0]}/{early[1]}" in ahead["unanswered"] and ahead["answered"] == []
    assert ann.get(url_of(late)).json()["shown"]
    assert ann.get(url_of(late) + "/reveals").json() == {"unanswered": [], "answered": []}  # shown already
    withheld = ann.get(url_of(early))
    item = withheld.json()
    assert item["shown"] is False and item["locked"]["by"] == f"{late[0]}/{late[1]}"
    assert item["instructions"] == "" and item["context"] == [] and item["current"] is None and item["given"] == {}
    assert not every_leak(bench, withheld.text)
    refused = ann.write("PUT", url_of(early) + "/answer", {"value": "any value at all", "version": 0})
    assert refused.status_code == 423 and "final" in refused.json()["detail"]
    queue_now = {(q["task"], q["number"]): q for q in ann.get("/api/bench/queue").json()}
    assert queue_now[early]["locked"] and not queue_now[early]["answered"]
    home = ann.get("/")
    assert "locked" in home.text


def test_an_answer_changed_after_its_reveal_in_the_database_is_not_counted(app):
    """A database written otherwise (an older rescue let a person change an answer after the reveal): the export's
    count leaves that answer out."""
    bench: Benchmark = app.state.project
    ann = ScanningClient(app, "ann")
    queue = [(q["task"], q["number"]) for q in ann.get("/api/bench/queue").json()]
    early, late = next((a, b) for i, a in enumerate(queue) for b in queue[i + 1:] if bench.reveals(b, a))
    rng = random.Random(5)
    for key in queue[:queue.index(late) + 1]:
        item = ann.get(url_of(key)).json()
        assert ann.write("PUT", url_of(key) + "/answer", {"value": scripted_answer(item, rng), "version": 0}).status_code == 200
    with app.state.sessions() as db:
        counted, late_count = counted_answers(db, bench)
        assert late_count == 0
        record = db.query(BenchAnswer).filter_by(user="ann", key=f"{early[0]}/{early[1]}").one()
        record.answered_at = "9999-01-01T00:00:00.000+00:00"  # changed after the reveal
        db.commit()
        counted_after, late_after = counted_answers(db, bench)
    assert late_after == 1 and len(counted_after) == len(counted) - 1
    assert not any((a["task"], a["number"], a["user"]) == (*early, "ann") for a in counted_after)
