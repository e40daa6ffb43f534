"""Accounts and assignment (admin): GET/POST /api/users, GET/POST /api/assignments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException


from rescue.errors import ReviewError
from rescue.review import crud
from rescue.review.api.deps import Adjudicator, Admin, Db, Body, PlainText, ProjectDep
from rescue.review.shapes import UserView

router = APIRouter(prefix="/api", tags=["users"])


class NewUser(Body):
    """The body of a new account: name, role and password."""

    name: PlainText
    role: PlainText
    password: PlainText


class AssignBody(Body):
    """The body of an assignment: annotators per segment, and who (everybody by default)."""

    k: int
    annotators: list[PlainText] | None = None


class PasswordBody(Body):
    """The body of a password change."""

    password: PlainText


@router.get("/users", response_model=list[dict[str, Any]])
def list_users(actor: Adjudicator, db: Db) -> list[UserView]:
    """GET /api/users: every account (adjudicators)."""
    return crud.list_users(db)


def _account_write(write: Callable[[], None]) -> dict[str, bool]:
    try:
        write()
    except ReviewError as exc:
        raise HTTPException(404 if str(exc).startswith("no user") else 422, str(exc)) from None
    return {"ok": True}


@router.post("/users/{name}/password")
def set_password(name: str, body: PasswordBody, actor: Admin, db: Db) -> dict[str, Any]:
    """A new password for an account; its sessions end."""
    return _account_write(lambda: crud.set_password(db, actor.name, name, body.password))


@router.post("/users/{name}/disable")
def disable_user(name: str, actor: Admin, db: Db) -> dict[str, Any]:
    """The account can no longer log in and its sessions end; its work and audit stay."""
    if name == actor.name:
        raise HTTPException(422, "you cannot disable your own account")
    return _account_write(lambda: crud.set_disabled(db, actor.name, name, True))


@router.post("/users/{name}/enable")
def enable_user(name: str, actor: Admin, db: Db) -> dict[str, Any]:
    """POST: enable a disabled account again (admins)."""
    return _account_write(lambda: crud.set_disabled(db, actor.name, name, False))


@router.post("/users", status_code=201)
def add_user(body: NewUser, actor: Admin, db: Db) -> dict[str, str]:
    """POST /api/users: create an account (admins); 422 for a bad name, role or password."""
    try:
        user = crud.create_user(db, actor.name, body.name, body.role, body.password)
    except ReviewError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"name": user.name, "role": user.role}


@router.get("/assignments")
def get_assignments(actor: Adjudicator, db: Db) -> dict[str, list[str]]:
    """GET /api/assignments: who is assigned to each segment (adjudicators)."""
    return crud.assignments(db)


@router.post("/assignments")
def make_assignments(body: AssignBody, actor: Admin, db: Db, project: ProjectDep) -> dict[str, list[str]]:
    """POST /api/assignments: assign ``k`` annotators to every segment (admins)."""
    try:
        return crud.assign(db, actor.name, project, body.k, body.annotators)
    except ReviewError as exc:
        raise HTTPException(422, str(exc)) from None
