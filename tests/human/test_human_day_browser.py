"""A scripted day of the human reference in Debian's Chromium through Playwright (issue #43): three people in two
groups take a stratified subset of every task in order with the keyboard, then go back over their whole queue and
try to change every answer, by the page's keys and by the page's own API call; exactly the answers a later page
revealed are refused (found by the leak scan on what each page was given, independently of the server), and no
answer counted was given after its reveal. Their answers are exported as a run and reported beside a model run on
every instance: the model on the people's subset, people's rows marked and never ranked.

``RESCUE_BENCH_SHOTS=FOLDER`` saves there a screenshot of each task's page, a locked page, the queue page and the
report's leaderboard (the test writes nothing there otherwise)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from bench_helpers import ALL_TASKS, bench_app, make_bench
from browser_helpers import TIMEOUT_S, browser, wait_until  # noqa: F401 (the browser fixture)
from review_helpers import Server
from test_human_benchmark_browser import answer_with_keys, login
from test_human_protocol import revealed_by

from rescue.data.reading import demo_path
from rescue.human.store import counted_answers, set_group

pytestmark = [pytest.mark.browser, pytest.mark.slow]
GROUPS = {"ann": "clinicians", "bob": "clinicians", "cat": "students"}
PER_TASK = int(os.environ.get("RESCUE_BENCH_PER_TASK", "3"))
SRC = Path(__file__).resolve().parents[2] / "src"


def _rescue(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rescue", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))})
    assert done.returncode == 0, (args, done.stdout, done.stderr)


def _open(page, server, key: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    page.goto(f"{server.url}/take/{key}")
    wait_until(page, "window.benchState && window.benchState().item !== null")
    return json.loads(page.evaluate("JSON.stringify(window.benchState().item)"))  # type: ignore[no-any-return]


def _put(page, key: str, value: object, version: int) -> int:  # type: ignore[no-untyped-def]
    """The page's own kind of call: PUT with the login's CSRF token, as the page's script sends it."""
    return int(page.evaluate("""async ([url, body]) => {
        const csrf = document.querySelector('meta[name=csrf]').content;
        const answer = await fetch(url, {method: 'PUT', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
                                         body: JSON.stringify(body)});
        return answer.status; }""", [f"/api/bench/items/{key}/answer", {"value": value, "version": version}]))


def test_three_people_in_two_groups_take_a_subset_in_order_and_cannot_change_what_was_revealed(browser, tmp_path):
    shots = Path(os.environ["RESCUE_BENCH_SHOTS"]) if os.environ.get("RESCUE_BENCH_SHOTS") else None
    bench_dir = make_bench(tmp_path / "bench", sample=PER_TASK)
    app = bench_app(bench_dir, bench_dir / "review.db", list(GROUPS), 2)  # where the export finds it
    bench = app.state.project
    with app.state.sessions() as db:
        for name, group in GROUPS.items():
            set_group(db, "test", name, group)
    server = Server(app)
    shot_tasks: set[str] = set()
    refused = changed = 0
    try:
        for seed, name in enumerate(GROUPS):
            context, page = login(browser, server, name)
            keys = [f"{row.split()[0].lower()}/{row.split()[1]}" for row in
                    page.locator("#bench-queue tbody tr td:nth-child(3)").all_inner_texts()]
            if shots is not None and seed == 0:
                page.screenshot(path=str(shots / "queue.png"), full_page=True)
            rng = random.Random(seed)
            views: list[tuple[tuple[str, int], str]] = []
            for key in keys:  # the whole queue, in order, by keyboard
                item = _open(page, server, key)
                assert item["locked"] is None and item["shown"], (name, key)
                views.append(((item["task"], item["number"]), json.dumps(item)))
                answer_with_keys(page, item["answer_kind"], rng)
                if shots is not None and item["task"] not in shot_tasks:
                    shots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shots / f"{item['task']}.png"), full_page=True)
                    shot_tasks.add(item["task"])
            for key in reversed(keys):  # back over it: try to change every answer
                item = _open(page, server, key)
                target = (item["task"], item["number"])
                revealed = any(revealed_by(bench, view, target) for view in views)
                assert (item["locked"] is not None) == revealed, (name, key, item["locked"])
                if revealed:
                    assert page.locator("#bench-locked").is_visible() and "final" in page.locator("#bench-locked").inner_text()
                    assert page.locator("#bench-answer button:not([disabled])").count() == 0
                    if shots is not None and not (shots / "locked.png").exists():
                        page.screenshot(path=str(shots / "locked.png"), full_page=True)
                    assert _put(page, key, item["value"], item["version"]) == 423
                    refused += 1
                else:
                    answer_with_keys(page, item["answer_kind"], rng)
                    changed += 1
            context.close()
        assert refused and changed
        with app.state.sessions() as db:
            counted, late = counted_answers(db, bench)
        assert late == 0 and {a["user"] for a in counted} == set(GROUPS)
    finally:
        server.stop()
        app.state.engine.dispose()

    # The report: people beside a model run on every instance (real `rescue` processes: Playwright's loop runs here).
    out, model, report = tmp_path / "people", tmp_path / "majority", tmp_path / "report"
    _rescue("review", "export", str(bench_dir), "--as-run", str(out), "--no-bertscore")
    _rescue("run", "--model", "baseline/majority", "--data", str(demo_path()), "--tasks", ",".join(ALL_TASKS),
            "--no-bertscore", "--out", str(model), "-q")
    _rescue("report", str(model), str(out), "--out", str(report), "--no-figures")
    board = (report / "leaderboard.md").read_text(encoding="utf-8")
    model_row = next(line for line in board.splitlines() if line.startswith("| baseline/majority | all |"))
    assert all(f"{task.upper()} {PER_TASK}/" in model_row for task in ALL_TASKS), model_row
    for system in ("human/clinicians/panel (panel)", "human/students/average (average person)", "human/cat (person)"):
        row = next(line for line in board.splitlines() if line.startswith(f"| {system} | all |"))
        assert "**" not in row, row
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_S * 1000)
    page.goto((report / "report.html").as_uri())
    table = page.locator("table.board").first
    assert "(panel)" in table.inner_text() and "(average person)" in table.inner_text()
    if shots is not None:
        table.screenshot(path=str(shots / "leaderboard.png"))
        (shots / "leaderboard.md").write_text(board, encoding="utf-8")
        (shots / "people.md").write_text((report / "people.md").read_text(encoding="utf-8"), encoding="utf-8")
    context.close()


def test_a_page_that_would_lock_an_unanswered_instance_asks_first(browser, tmp_path):
    """Jumping ahead in the browser: the page names the open instances it would lock and shows nothing until the
    person chooses; going back shows nothing (and reveals nothing), opening it locks them."""
    bench_dir = make_bench(tmp_path / "bench", sample=PER_TASK)
    app = bench_app(bench_dir, bench_dir / "review.db", ["ann"], 1)
    bench = app.state.project
    server = Server(app)
    try:
        context, page = login(browser, server, "ann")
        keys = [f"{row.split()[0].lower()}/{row.split()[1]}" for row in
                page.locator("#bench-queue tbody tr td:nth-child(3)").all_inner_texts()]
        pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1:]]
        early, late = next((a, b) for a, b in pairs if bench.reveals(tuple_of(b), tuple_of(a)))
        page.goto(f"{server.url}/take/{late}")
        page.wait_for_selector("#bench-warning")
        assert early.replace("/", " ").upper() in page.locator("#bench-warning").inner_text()
        assert page.evaluate("window.benchState().item") is None  # nothing of the page yet
        page.click("#bench-back")
        page.wait_for_url(server.url + "/")
        page.goto(f"{server.url}/take/{late}")  # still asks: going back revealed nothing
        page.wait_for_selector("#bench-warning")
        page.click("#bench-open")
        wait_until(page, "window.benchState().item !== null")
        page.goto(f"{server.url}/take/{early}")
        page.wait_for_selector("#bench-locked")
        assert "stays unanswered" in page.locator("#bench-locked").inner_text()
        assert page.evaluate("window.benchState().item.instructions") == ""
        context.close()
    finally:
        server.stop()
        app.state.engine.dispose()


def tuple_of(key: str) -> tuple[str, int]:
    task, number = key.split("/")
    return task, int(number)
