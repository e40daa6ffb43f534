"""The web app of a benchmark project: the review tool's login, accounts, CSRF, body limit and security headers,
with pages and API routes for taking the benchmark instead of verifying drafts.

- ``GET /``: the person's queue (admins: everyone's progress, counts only);
- ``GET /take/{task}/{number}``: the page of one instance; ``GET /api/bench/items/{task}/{number}``: its data;
- ``PUT /api/bench/items/{task}/{number}/answer`` ``{"value": ..., "version": n}``: the answer, saved at once;
- ``GET /api/bench/items/{task}/{number}/reveals``: what opening that page would lock (nothing is shown);
- ``GET /api/bench/queue``: the person's instances, which are answered and which are locked;
- ``GET /agreement`` and ``GET /api/bench/export`` (adjudicators, admins): agreement so far; the answers that count.

A person reads and writes only the instances assigned to them and only their own answers (blind to each other).
No look-ahead (docs/human.md, :mod:`rescue.human.store`): an answer to an instance whose hidden content the
person was already shown is refused (423), and a locked instance never answered shows nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from rescue.errors import AnswerLocked, Conflict, ReviewError
from rescue.human import store
from rescue.review.api.deps import Adjudicator, Body, CurrentUser, Db, PageUser
from rescue.review.api.routes import login, users
from rescue.review.api.routes.pages import admin_page, login_page, render
from rescue.review.app import app_around
from rescue.human.benchmark import Benchmark, load_benchmark, page, withheld_page
from rescue.human.export import human_summary
from rescue.human.shapes import BenchQueueEntry, QueuePosition, Reveals

router = APIRouter()


def _bench(request: Request) -> Benchmark:
    return request.app.state.project  # type: ignore[no-any-return]


def _mine(db: Db, request: Request, user: str, task: str, number: int) -> None:
    try:
        _bench(request).instance(task, number)
    except ReviewError as exc:
        raise HTTPException(404, str(exc)) from None
    if not store.assigned(db, user, task, number):
        raise HTTPException(403, "this instance is not in your queue")


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def home(request: Request, actor: PageUser, db: Db) -> HTMLResponse:
    """The person's queue, or for an admin everyone's progress."""
    bench = _bench(request)
    mine = store.queue(db, actor.name, bench)
    first = next((q for q in mine if not q["answered"] and not q["locked"]), None)
    return render(request, "bench_home.html", actor, queue=mine, first=first, tasks=bench.tasks,
                   progress=store.progress(db) if actor.at_least("admin") else None,
                   counts={t: len(v) for t, v in bench.instances.items()})


@router.get("/take/{task}/{number}", response_class=HTMLResponse, include_in_schema=False)
def take(request: Request, actor: PageUser, db: Db, task: str, number: int) -> HTMLResponse:
    """The page of one instance of the person's queue."""
    _mine(db, request, actor.name, task, number)
    return render(request, "bench_item.html", actor, task=task, number=number)


def _link(entry: BenchQueueEntry | None) -> str | None:
    return f"/take/{entry['task']}/{entry['number']}" if entry else None


def _neighbours(db: Db, bench: Benchmark, user: str, task: str, number: int) -> QueuePosition:
    mine = store.queue(db, user, bench)
    at = next(i for i, q in enumerate(mine) if (q["task"], q["number"]) == (task, number))
    return {"position": at + 1, "of": len(mine), "answered": sum(q["answered"] for q in mine),
            "previous": _link(mine[at - 1] if at > 0 else None),
            "next": _link(mine[at + 1] if at + 1 < len(mine) else None),
            "next_open": _link(next((q for q in mine[at + 1:] + mine[:at] if not q["answered"] and not q["locked"]), None))}


@router.get("/api/bench/items/{task}/{number}")
def item(request: Request, actor: CurrentUser, db: Db, task: str, number: int) -> dict[str, Any]:
    """What the instance's page shows, the person's own answer so far and its lock, and where it sits in their
    queue. A locked instance never answered shows only its task and number (its page would reveal more)."""
    _mine(db, request, actor.name, task, number)
    bench = _bench(request)
    mine = store.shown(db, bench, actor.name, task, number)
    shown = page(bench, task, number) if mine["shown"] else withheld_page(bench, task, number)
    return {**shown, **mine, "queue": _neighbours(db, bench, actor.name, task, number)}


@router.get("/api/bench/items/{task}/{number}/reveals", response_model=dict[str, list[str]])
def item_reveals(request: Request, actor: CurrentUser, db: Db, task: str, number: int) -> Reveals:
    """What opening the instance's page would lock of the person's queue (asked before it is opened)."""
    _mine(db, request, actor.name, task, number)
    return store.reveals(db, _bench(request), actor.name, task, number)


@router.get("/api/bench/queue", response_model=list[dict[str, Any]])
def my_queue(request: Request, actor: CurrentUser, db: Db) -> list[BenchQueueEntry]:
    """The person's instances in order, which are answered and which are locked."""
    return store.queue(db, actor.name, _bench(request))


@router.get("/agreement", response_class=HTMLResponse, include_in_schema=False)
def agreement_page(request: Request, actor: PageUser, db: Db) -> HTMLResponse:
    """Adjudicators and admins: agreement between people so far, per task and per group (counts and figures, no
    answer), from the answers that count."""
    if not actor.at_least("adjudicator"):
        raise HTTPException(403, "needs the adjudicator role")
    bench = _bench(request)
    answers, late = store.counted_answers(db, bench)
    summary = human_summary(bench, answers, store.assigned_keys(db), store.groups(db), late)
    return render(request, "bench_agreement.html", actor, summary=summary, tasks=bench.tasks)


@router.get("/api/bench/export")
def export_answers(request: Request, actor: Adjudicator, db: Db) -> Response:
    """Adjudicators and admins: every answer that counts as JSON lines (task, number, instance id, person, group,
    value, seconds), for analysis; `rescue review export --as-run` makes the run the report reads."""
    bench = _bench(request)
    answers, _late = store.counted_answers(db, bench)
    groups = store.groups(db)
    lines = [json.dumps({**a, "instance_id": bench.instance(a["task"], a["number"]).instance_id,
                         "group": groups.get(a["user"], "")}, ensure_ascii=False, sort_keys=True) for a in answers]
    return Response("".join(line + "\n" for line in lines), media_type="application/x-ndjson",
                    headers={"Content-Disposition": 'attachment; filename="answers.jsonl"'})


class AnswerBody(Body):
    """PUT .../answer: the answer in the task's shape, and the answer version the page last saw."""

    value: Any
    version: int


@router.put("/api/bench/items/{task}/{number}/answer")
def answer(request: Request, actor: CurrentUser, db: Db, task: str, number: int, body: AnswerBody) -> dict[str, Any]:
    """Save the person's answer at once (409 with the stored one when another tab changed it meanwhile)."""
    _mine(db, request, actor.name, task, number)
    try:
        version = store.save(db, _bench(request), actor.name, task, number, body.value, body.version)
    except Conflict as exc:
        raise HTTPException(409, {"message": "this answer was changed in another tab; the page now shows it",
                                  "current": exc.current}) from None
    except AnswerLocked as exc:
        raise HTTPException(423, {"message": str(exc), "locked": {"by": exc.revealed_by, "at": exc.at}}) from None
    except ReviewError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"version": version}


def create_app(root: str | Path, db_url: str | None = None) -> FastAPI:
    """The benchmark app for the project folder ``root`` (SQLite in the folder by default), inside the review
    tool's own set-up (engine, login routes, static files, error answers, body limit, security headers)."""
    bench = load_benchmark(root)
    # The tables of rescue.human.store are registered (imported above) before app_around creates them.
    app = app_around(bench, db_url, [login.router, users.router, router])
    app.get("/login", response_class=HTMLResponse, include_in_schema=False)(login_page)
    app.get("/admin", response_class=HTMLResponse, include_in_schema=False)(admin_page)  # accounts, as in review

    @app.get("/segments/{rest:path}", include_in_schema=False)
    def not_here(rest: str = "") -> Response:
        # A verification project's pages: nothing to verify here.
        return RedirectResponse("/", status_code=303)

    # The nav's Agreement and Export lead to the benchmark's own (base.html reads this).
    app.state.templates.env.globals["benchmark"] = True
    return app
