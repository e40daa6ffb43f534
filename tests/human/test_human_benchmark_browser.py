"""Two people take the benchmark in Debian's Chromium through Playwright (issue #38): instances of every task on the
demo data, answered with the keyboard, each page's text through the leak scan, resumed after a new login.

``RESCUE_BENCH_SHOTS=FOLDER`` saves one screenshot of each task's page there (the test writes nothing otherwise)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from bench_helpers import ALL_TASKS, bench_app, make_bench, page_leaks
from review_helpers import PASSWORD, Server
from browser_helpers import TIMEOUT_S, browser, wait_until  # noqa: F401 (the browser fixture)

from rescue.human.store import all_answers
from rescue.tasks import get_task

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PER_TASK = int(os.environ.get("RESCUE_BENCH_PER_TASK", "3"))  # instances of each task each person answers


def login(browser, server, name: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1440, "height": 960})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_S * 1000)
    page.goto(server.url + "/")
    assert "/login" in page.url
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(server.url + "/")
    return context, page


def answer_with_keys(page, kind: str, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    """Answer the open instance with the keyboard, as a person would."""
    if kind == "label":
        page.keyboard.press(rng.choice(["y", "n"]))
    elif kind == "ranking":
        count = page.evaluate("window.benchState().item.rank")
        labels = page.evaluate("window.benchState().item.labels.length")
        for digit in rng.sample(range(1, min(labels, 9) + 1), count):
            page.keyboard.press(str(digit))
    elif kind == "emotion":
        page.focus("#bench-emotion")
        page.keyboard.type(rng.choice(["feels unheard and frustrated", "anxious, defensive"]))
        page.keyboard.press("Tab")
        page.keyboard.type(str(rng.randint(2, 9)))
        page.keyboard.press("Enter")
    else:
        people = page.evaluate("window.benchState().item.people")
        speaker = page.evaluate("window.benchState().item.speaker")
        # Someone else: a viewpoint about its own source is refused, as for a model (self-target).
        target = rng.choice([p for p in people if p != speaker])
        page.select_option(".vp-row select[aria-label=target]", index=1 + people.index(target))
        page.focus(".vp-row input")
        page.keyboard.type(rng.choice(["never listens to me", "is trying to help"]))
        page.keyboard.press("Enter")
    wait_until(page, "document.getElementById('bench-status').className === 'saved'")


def take(page, server, bench, count: int, rng: random.Random, shots: Path | None,  # type: ignore[no-untyped-def]
         dragged: dict[str, list[str]] | None = None) -> list[str]:
    """Answer the person's next ``count`` open instances; returns their keys. With ``dragged``, the first ranking
    answered is then reordered by drag (its key and the order before, into ``dragged``)."""
    page.click("#bench-continue")
    done: list[str] = []
    for _ in range(count):
        left = f"{server.url}/take/{done[-1]}" if done else None
        page.wait_for_url(lambda url, left=left: "/take/" in url and url != left)
        page.wait_for_load_state()
        wait_until(page, "window.benchState && window.benchState().item !== null")
        task, number = page.url.rsplit("/", 2)[-2:]
        html = page.content()
        leaks = page_leaks(get_task(task), bench.instance(task, int(number)), html)
        assert not leaks, (page.url, leaks)
        kind = page.evaluate("window.benchState().item.answer_kind")
        answer_with_keys(page, kind, rng)
        if dragged is not None and kind == "ranking" and not dragged:
            before = page.evaluate("window.benchState().value")
            page.drag_and_drop("#bench-ranking li[data-rank='1']", "#bench-ranking li[data-rank='0']")
            wait_until(page, f"JSON.stringify(window.benchState().value) !== {json.dumps(json.dumps(before))}")
            wait_until(page, "document.getElementById('bench-status').className === 'saved'")
            dragged[f"{task}/{number}"] = before
        if shots is not None and not (shots / f"{task}.png").exists():
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / f"{task}.png"), full_page=True)
        done.append(f"{task}/{number}")
        page.keyboard.press("Escape")
        page.keyboard.press("Enter")  # on to the next open instance
    return done


def test_two_people_take_every_task_by_keyboard_and_come_back(browser, tmp_path):
    bench_dir = make_bench(tmp_path / "bench", sample=PER_TASK)
    app = bench_app(bench_dir, tmp_path / "review.db")
    server = Server(app)
    shots = Path(os.environ["RESCUE_BENCH_SHOTS"]) if os.environ.get("RESCUE_BENCH_SHOTS") else None
    bench = app.state.project
    try:
        taken = {}
        dragged: dict[str, list[str]] = {}
        for name, seed in (("ann", 1), ("bob", 2)):
            context, page = login(browser, server, name)
            first = take(page, server, bench, len(ALL_TASKS), random.Random(seed), shots, dragged if name == "ann" else None)
            context.close()
            context, page = login(browser, server, name)  # stopped, and back later
            assert page.locator("#bench-continue").inner_text() == "Continue"
            left = page.locator("#bench-queue tbody tr").count() - len(first)
            taken[name] = first + take(page, server, bench, left, random.Random(seed + 10), shots)
            context.close()
        with app.state.sessions() as db:
            stored = all_answers(db)
        for name, keys in taken.items():  # the whole queue, taken in order: every answer accepted
            mine = {f"{a['task']}/{a['number']}" for a in stored if a["user"] == name}
            assert mine == set(keys) and len(keys) >= len(ALL_TASKS) * (PER_TASK - 1)
            assert {k.split("/")[0] for k in keys} == set(ALL_TASKS)
        assert all(a["seconds"] is not None and a["seconds"] >= 0 for a in stored)
        # A ranking reordered by drag (before the next page: later it is final) is saved in its new order.
        (rpp, before), = dragged.items()
        with app.state.sessions() as db:
            saved = next(a["value"] for a in all_answers(db) if a["user"] == "ann" and f"{a['task']}/{a['number']}" == rpp)
        assert saved == [before[1], before[0], *before[2:]]
    finally:
        server.stop()
        app.state.engine.dispose()
