"""The HTML pages: login, dashboard, segment view, adjudication view, agreement. Templates autoescape
every value; data for the scripts travels as JSON inside a non-executed script element."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select

from rescue.review.api.deps import Actor, Db, PageUser, ProjectDep, get_segment, has_assignments, require_queue
from rescue.review.crud import assignments, list_users
from rescue.review.guidelines import load_guidelines
from rescue.review.models import FINAL, ROLES, User
from rescue.review.progress import dashboard
from rescue.review.queue import SORT_KEYS, STATUS_ORDER, QueueQuery, narrow, queue, search

router = APIRouter(include_in_schema=False)


def render(request: Request, name: str, actor: Actor | None, **context: Any) -> HTMLResponse:
    """A page from its template, with the actor (None: nobody is logged in)."""
    templates = request.app.state.templates
    return templates.TemplateResponse(request, name, {"actor": actor, **context})  # type: ignore[no-any-return]


def _safe_next(value: str) -> str:
    return value if value.startswith("/") and not value.startswith("//") and "\\" not in value else "/"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    """GET /login: the login page."""
    return render(request, "login.html", None, next_url=_safe_next(next))


def _number(value: str, kind: type[int] | type[float]) -> int | float | None:
    try:
        return kind(value) if value.strip() else None
    except ValueError:
        return None


# The dashboard's filter form sends every field, empty ones included; an empty or unreadable value filters nothing.
QUEUE_PARAMS = ("status", "assignee", "problems", "speakers", "min_duration", "max_duration", "sort", "order", "q")


def _queue_query(params: dict[str, str]) -> QueueQuery:
    return QueueQuery(
        status=params["status"] if params["status"] in STATUS_ORDER else None,
        assignee=params["assignee"] or None,
        problems={"true": True, "false": False}.get(params["problems"]),
        speakers=_number(params["speakers"], int),  # type: ignore[arg-type]
        min_duration=_number(params["min_duration"], float),
        max_duration=_number(params["max_duration"], float),
        sort=params["sort"] if params["sort"] in SORT_KEYS else "sample_id",
        descending=params["order"] == "desc",
    )


@router.get("/", response_class=HTMLResponse)
def dashboard_page(request: Request, actor: PageUser, db: Db, project: ProjectDep) -> HTMLResponse:
    """GET /: the dashboard: progress, the queue with its filters and the transcript search."""
    users = [(u.name, u.role) for u in db.scalars(select(User).order_by(User.name))]
    blind = not actor.at_least("adjudicator")
    numbers = dashboard(db, project, users, actor.name if blind else FINAL)
    params = {name: request.query_params.get(name, "") for name in QUEUE_PARAMS}
    only_assigned = has_assignments(db) and blind
    everything = queue(db, project, actor.name, only_assigned=only_assigned, blind=blind)
    segments = narrow(everything, _queue_query(params))
    found = search(db, project, params["q"], [s["sample_id"] for s in everything],
                   None if actor.at_least("adjudicator") else [actor.name]) if params["q"].strip() else None

    def sort_url(key: str) -> str:  # a column header: sort by it, the second click reverses
        order = "desc" if params["sort"] == key and params["order"] != "desc" else "asc"
        return "/?" + urlencode({**{k: v for k, v in params.items() if v}, "sort": key, "order": order})

    choices = {"statuses": STATUS_ORDER, "assignees": sorted({n for s in everything for n in s["assigned"]}),
               "speakers": sorted({s["speakers"] for s in everything})}
    return render(request, "dashboard.html", actor, numbers=numbers, segments=segments, total=len(everything),
                  root=str(project.root) if actor.at_least("adjudicator") else None, params=params, choices=choices, found=found, sort_url=sort_url)


@router.get("/segments/{segment_id:path}/adjudicate", response_class=HTMLResponse)
def adjudicate_page(segment_id: str, request: Request, actor: PageUser, project: ProjectDep) -> Response:
    """GET /segments/ID/adjudicate: the adjudication view (adjudicators; others go to the segment page)."""
    get_segment(project, segment_id)
    if not actor.at_least("adjudicator"):
        return RedirectResponse(request.url_for("segment_page", segment_id=segment_id), status_code=303)
    return render(request, "adjudicate.html", actor, boot={"segment": segment_id, "csrf": actor.csrf, "me": actor.name},
                  guidelines=load_guidelines(project.root))


@router.get("/segments/{segment_id:path}", response_class=HTMLResponse, name="segment_page")
def segment_page(segment_id: str, request: Request, actor: PageUser, db: Db, project: ProjectDep,
                 copy: str = "mine") -> HTMLResponse:
    """GET /segments/ID: the segment editor, with links to the previous and next segment of the queue."""
    get_segment(project, segment_id)
    require_queue(db, actor, segment_id)
    ids = list(project.segments)
    if has_assignments(db) and not actor.at_least("adjudicator"):  # previous / next within the queue
        plan = assignments(db)
        ids = [sid for sid in ids if actor.name in plan.get(sid, []) or sid == segment_id]
    position = ids.index(segment_id)
    boot = {"segment": segment_id, "copy": copy, "csrf": actor.csrf, "me": actor.name, "role": actor.role,
            "previous": ids[position - 1] if position > 0 else None,
            "next": ids[position + 1] if position + 1 < len(ids) else None}
    return render(request, "segment.html", actor, boot=boot, segment_id=segment_id,
                  guidelines=load_guidelines(project.root))


@router.get("/agreement", response_class=HTMLResponse)
def agreement_page(request: Request, actor: PageUser, db: Db, project: ProjectDep) -> Response:
    """GET /agreement: agreement between annotators (adjudicators)."""
    if not actor.at_least("adjudicator"):
        return RedirectResponse("/", status_code=303)
    from rescue.review.annotator_agreement import compute_agreement  # see routes/agreement.py

    return render(request, "agreement.html", actor, result=compute_agreement(db, project))


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, actor: PageUser, db: Db) -> Response:
    """GET /admin: users and assignments (admins)."""
    if not actor.at_least("admin"):
        return RedirectResponse("/", status_code=303)
    return render(request, "admin.html", actor, users=list_users(db), roles=ROLES)
