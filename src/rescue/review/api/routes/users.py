"""Accounts and assignment (admin): GET/POST /api/users, GET/POST /api/assignments."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from rescue.review import crud
from rescue.review.api.deps import Adjudicator, Admin, Db, PlainText, ProjectDep
from rescue.review.models import User

router = APIRouter(prefix="/api", tags=["users"])


class NewUser(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: PlainText
    role: PlainText
    password: PlainText


class AssignBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int
    annotators: list[PlainText] | None = None


@router.get("/users")
def list_users(actor: Adjudicator, db: Db) -> list[dict[str, Any]]:
    return [{"name": u.name, "role": u.role, "created_at": u.created_at} for u in db.scalars(select(User).order_by(User.name))]


@router.post("/users", status_code=201)
def add_user(body: NewUser, actor: Admin, db: Db) -> dict[str, str]:
    try:
        user = crud.create_user(db, actor.name, body.name, body.role, body.password)
    except crud.ReviewError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"name": user.name, "role": user.role}


@router.get("/assignments")
def get_assignments(actor: Adjudicator, db: Db) -> dict[str, list[str]]:
    return crud.assignments(db)


@router.post("/assignments")
def make_assignments(body: AssignBody, actor: Admin, db: Db, project: ProjectDep) -> dict[str, list[str]]:
    try:
        return crud.assign(db, actor.name, project, body.k, body.annotators)
    except crud.ReviewError as exc:
        raise HTTPException(422, str(exc)) from None
