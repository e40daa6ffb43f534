"""Dependencies every route declares: the database session, the project, the logged-in user, role and
CSRF checks, and which copy of a segment a request may read or write."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue.review import security
from rescue.review.crud import assignments, segment_assignees
from rescue.review.models import FINAL, ROLES, Assignment, LoginSession, User
from rescue.review.project import Project, Segment
from rescue.review.shapes import AuditView
from rescue.errors import LoginRequired as LoginRequired, UnstorableBody as UnstorableBody

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str from JSON, always lone: a pair decodes to one character


def _storable(value: str) -> str:
    # PostgreSQL's text columns cannot hold NUL (SQLite's can): refused alike on every backend, naming the field.
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    if len(value) > security.MAX_TEXT_CHARS:
        raise ValueError(f"longer than {security.MAX_TEXT_CHARS:,} characters")
    return value


PlainText = Annotated[str, AfterValidator(_storable)]
"""A string from a request body that goes into the database as it is."""


def _where(path: str, key: object) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)


def unstorable(value: Any) -> list[dict[str, str]]:
    """Every place in JSON data (``field.key[i]``) holding a lone UTF-16 surrogate (``\\ud800``: JSON escapes
    can carry one; UTF-8, hence the database and the answer, cannot) or a non-finite number (Python's JSON
    reader takes ``NaN`` and ``Infinity``; the database stores them as null and no answer can carry them).
    Iterative: a body's nesting is bounded by its size, not by the stack."""
    problems: list[dict[str, str]] = []
    pending: list[tuple[str, Any]] = [("", value)]
    while pending and len(problems) < 20:
        path, item = pending.pop()
        if isinstance(item, str) and _SURROGATE.search(item):
            problems.append({"field": path or "body", "message": "holds a lone UTF-16 surrogate, which cannot be "
                             "stored as text (send the character itself, or a surrogate pair)"})
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append({"field": path or "body", "message": f"{item} is not a finite number"})
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    problems.append({"field": path or "body", "message": "a key holds a lone UTF-16 surrogate"})
                pending.append((_where(path, key), inner))
        elif isinstance(item, list):
            pending.extend((_where(path, i), inner) for i, inner in enumerate(item))
    return problems


class Body(BaseModel):
    """The one base of every request body: unknown keys are refused, and so is anything the database or an
    answer cannot carry (:func:`unstorable`), wherever it sits, so every write refuses it in the same way."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable_everywhere(cls, data: Any) -> Any:
        problems = unstorable(data)
        if problems:
            raise UnstorableBody(problems)
        return data


@dataclass(frozen=True)
class Actor:
    """The logged-in user of a request: id, name, role and the login's CSRF token."""

    id: int
    name: str
    role: str
    csrf: str
    token: str

    def at_least(self, role: str) -> bool:
        """Whether the actor's role is ``role`` or above it."""
        return ROLES.index(self.role) >= ROLES.index(role)


def get_db(request: Request) -> Iterator[Session]:
    """A database session for one request, closed after it."""
    db = request.app.state.sessions()
    try:
        yield db
    finally:
        db.close()


def get_project(request: Request) -> Project:
    """The project the app serves."""
    return request.app.state.project  # type: ignore[no-any-return]


Db = Annotated[Session, Depends(get_db)]
ProjectDep = Annotated[Project, Depends(get_project)]


def _actor(request: Request, db: Session) -> Actor | None:
    token = request.cookies.get(security.SESSION_COOKIE)
    if not token:
        return None
    found = db.execute(
        select(LoginSession, User).join(User, User.id == LoginSession.user_id)
        .where(LoginSession.token_hash == security.token_hash(token))
    ).first()
    if found is None:
        return None
    session, user = found
    if security.expired(session.expires_at) or user.disabled_at:  # disabling ends sessions; this holds meanwhile
        return None
    return Actor(user.id, user.name, user.role, session.csrf, token)


def current_user(request: Request, db: Db) -> Actor:
    """The logged-in user of an API request (401 without a login; 403 for a write without the CSRF header)."""
    actor = _actor(request, db)
    if actor is None:
        raise HTTPException(401, "log in first (POST /api/login)")
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        sent = request.headers.get(security.CSRF_HEADER, "")
        if not sent or not security.same(sent, actor.csrf):
            raise HTTPException(403, f"missing or wrong {security.CSRF_HEADER} header")
    return actor


def page_user(request: Request, db: Db) -> Actor:
    """The logged-in user of a page request; without a login, a redirect to the login page."""
    actor = _actor(request, db)
    if actor is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired("/login?next=" + quote(target, safe=""))
    return actor


CurrentUser = Annotated[Actor, Depends(current_user)]
PageUser = Annotated[Actor, Depends(page_user)]


def require(role: str):  # type: ignore[no-untyped-def]
    """A dependency that lets through users with ``role`` or above (403 otherwise)."""
    def check(actor: CurrentUser) -> Actor:
        if not actor.at_least(role):
            raise HTTPException(403, f"needs the {role} role")
        return actor

    return check


Adjudicator = Annotated[Actor, Depends(require("adjudicator"))]
Admin = Annotated[Actor, Depends(require("admin"))]


def get_segment(project: Project, segment_id: str) -> Segment:
    """The project's segment ``segment_id``; 404 when there is none."""
    segment = project.segment(segment_id)
    if segment is None:
        raise HTTPException(404, f"no segment {segment_id!r}")
    return segment


def has_assignments(db: Session) -> bool:
    """Whether any segment has been assigned yet."""
    return db.scalar(select(Assignment.id).limit(1)) is not None


def may_annotate(db: Session, actor: Actor, segment_id: str) -> bool:
    """Annotators work on their queue; with no assignment made yet, everybody may work on everything."""
    if actor.at_least("adjudicator"):
        return True
    if not has_assignments(db):
        return True
    return actor.name in segment_assignees(db, segment_id)


def visible_audit(db: Session, actor: Actor, segment_id: str, row_index: int | None = None) -> list[AuditView]:
    """The audit entries of a segment ``actor`` may read. Annotators: only segments in their queue, and only
    their own copy's entries (blind double annotation: a co-annotator's edits stay unseen until adjudication)."""
    from rescue.review.crud import audit_log

    entries = audit_log(db, segment_id, row_index)
    if actor.at_least("adjudicator"):
        return entries
    if not may_annotate(db, actor, segment_id):
        raise HTTPException(403, "this segment is not in your queue")
    return [e for e in entries if e["copy"] == actor.name]


def require_queue(db: Session, actor: Actor, segment_id: str) -> None:
    """403 unless ``actor`` may work on the segment (adjudicators: every one; annotators: their queue)."""
    if not may_annotate(db, actor, segment_id):
        raise HTTPException(403, "this segment is not in your queue")


def resolve_copy(db: Session, actor: Actor, segment_id: str, requested: str | None, write: bool) -> str:
    """The copy a request works on: ``mine`` (the default), ``final`` (adjudicators), or for reading only,
    another annotator's name (adjudicators)."""
    if requested in (None, "", "mine", actor.name):
        if not may_annotate(db, actor, segment_id):
            raise HTTPException(403, "this segment is not in your queue")
        return actor.name
    if requested == FINAL:
        if not actor.at_least("adjudicator"):
            raise HTTPException(403, "the final copy needs the adjudicator role")
        return FINAL
    if "\x00" in requested:  # no such user can exist, and PostgreSQL would refuse to even look it up
        raise HTTPException(404, f"no user {requested!r}")
    if write:
        raise HTTPException(403, "you may only write your own copy or, as adjudicator, the final one")
    if not actor.at_least("adjudicator"):
        raise HTTPException(403, "reading another annotator's copy needs the adjudicator role")
    if requested not in (assignments(db).get(segment_id) or []) and db.scalar(select(User.id).where(User.name == requested)) is None:
        raise HTTPException(404, f"no user {requested!r}")
    return requested
