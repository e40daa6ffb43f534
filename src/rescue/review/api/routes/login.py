"""POST /api/login, POST /api/logout, GET /api/me."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response


from rescue.errors import AccountDisabled
from rescue.review import crud, security
from rescue.review.api.deps import CurrentUser, Db, Body, PlainText

router = APIRouter(prefix="/api", tags=["login"])


class LoginBody(Body):
    """The body of POST /api/login."""

    name: PlainText
    password: PlainText


@router.post("/login")
def login(body: LoginBody, request: Request, response: Response, db: Db) -> dict[str, str]:
    """POST /api/login: check the password (throttled), start a login session and set its cookie."""
    throttle: security.LoginThrottle = request.app.state.login_throttle
    client = request.client.host if request.client else ""
    refused = throttle.begin(client, body.name)
    if refused:
        raise HTTPException(429, refused)
    found = None
    try:
        found = crud.login(db, body.name, body.password)
    except AccountDisabled as exc:
        raise HTTPException(403, str(exc)) from None
    finally:
        throttle.end(client, body.name, found is not None)
    if found is None:
        raise HTTPException(401, "wrong name or password")
    user, token, csrf = found
    response.set_cookie(
        security.SESSION_COOKIE, token, max_age=security.SESSION_HOURS * 3600, httponly=True, samesite="strict",
        secure=request.url.scheme == "https", path="/",
    )
    return {"csrf": csrf, "name": user.name, "role": user.role}


@router.post("/logout")
def logout(actor: CurrentUser, response: Response, db: Db) -> dict[str, bool]:
    """POST /api/logout: end the login session and remove its cookie."""
    crud.logout(db, actor.token)
    response.delete_cookie(security.SESSION_COOKIE, path="/")
    return {"ok": True}


@router.get("/me")
def me(actor: CurrentUser) -> dict[str, str]:
    """GET /api/me: the logged-in user's name, role and CSRF token."""
    return {"name": actor.name, "role": actor.role, "csrf": actor.csrf}
