"""The HTML pages: login, dashboard, segment view, adjudication view, agreement. Templates autoescape
every value; data for the scripts travels as JSON inside a non-executed script element."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select

from rescue.review.agreement import compute_agreement
from rescue.review.api.deps import Db, PageUser, ProjectDep, get_segment, has_assignments
from rescue.review.crud import assignments, list_users
from rescue.review.guidelines import load_guidelines
from rescue.review.models import ROLES, User
from rescue.review.progress import dashboard, project_progress

router = APIRouter(include_in_schema=False)


def render(request: Request, name: str, actor: Any, **context: Any) -> HTMLResponse:
    templates = request.app.state.templates
    return templates.TemplateResponse(request, name, {"actor": actor, **context})  # type: ignore[no-any-return]


def _safe_next(value: str) -> str:
    return value if value.startswith("/") and not value.startswith("//") and "\\" not in value else "/"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", None, next_url=_safe_next(next))


@router.get("/", response_class=HTMLResponse)
def dashboard_page(request: Request, actor: PageUser, db: Db, project: ProjectDep) -> HTMLResponse:
    users = [(u.name, u.role) for u in db.scalars(select(User).order_by(User.name))]
    numbers = dashboard(db, project, users)
    progress = project_progress(db, project)
    queue_only = has_assignments(db) and not actor.at_least("adjudicator")
    segments = [
        {"id": sid, "rows": len(s.rows), "scenario": s.scenario, "status": progress[sid].status,
         "mine": progress[sid].states.get(actor.name, {}).get("status", "open"),
         "assigned": progress[sid].assigned, "problems": len(s.problems), "comments": progress[sid].comments,
         "media": s.clip is not None}
        for sid, s in project.segments.items() if not queue_only or actor.name in progress[sid].assigned
    ]
    return render(request, "dashboard.html", actor, numbers=numbers, segments=segments, root=str(project.root))


@router.get("/segments/{segment_id:path}/adjudicate", response_class=HTMLResponse)
def adjudicate_page(segment_id: str, request: Request, actor: PageUser, project: ProjectDep) -> Response:
    get_segment(project, segment_id)
    if not actor.at_least("adjudicator"):
        return RedirectResponse(request.url_for("segment_page", segment_id=segment_id), status_code=303)
    return render(request, "adjudicate.html", actor, boot={"segment": segment_id, "csrf": actor.csrf, "me": actor.name},
                  guidelines=load_guidelines(project.root))


@router.get("/segments/{segment_id:path}", response_class=HTMLResponse, name="segment_page")
def segment_page(segment_id: str, request: Request, actor: PageUser, db: Db, project: ProjectDep,
                 copy: str = "mine") -> HTMLResponse:
    get_segment(project, segment_id)
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
    if not actor.at_least("adjudicator"):
        return RedirectResponse("/", status_code=303)
    return render(request, "agreement.html", actor, result=compute_agreement(db, project))


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, actor: PageUser, db: Db) -> Response:
    if not actor.at_least("admin"):
        return RedirectResponse("/", status_code=303)
    return render(request, "admin.html", actor, users=list_users(db), roles=ROLES)
