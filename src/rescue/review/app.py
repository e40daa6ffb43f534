"""The FastAPI application of ``rescue review serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.exc import DataError, OperationalError

from rescue.errors import ReviewError, StoredValueError, is_disk_full
from rescue.review.api.deps import CurrentUser, LoginRequired, UnstorableBody
from rescue.review.api.routes import agreement, export, login, media, pages, rows, search, segments, users
from rescue.review.db import default_url, make_engine, session_factory
from rescue.review.project import Project, is_benchmark, load_project
from rescue.review.security import BodyLimit, LoginThrottle

HERE = Path(__file__).parent

SECURITY_HEADERS = {
    # Everything the pages use comes from the app itself: no CDN, no inline script or style.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; media-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class ServedProject(Protocol):
    """What the app around the routes needs of the project it serves (a verification project, or the human
    reference's benchmark project, :mod:`rescue.human`): the folder it lives in."""

    root: Path


def create_app(project_dir: str | Path | Project, db_url: str | None = None) -> FastAPI:
    """The review app for a verification project's folder and database (SQLite in the folder by default). A
    benchmark project is served by :func:`rescue.human.app.create_app` (ReviewError here)."""
    if not isinstance(project_dir, Project) and is_benchmark(project_dir):
        raise ReviewError(f"{project_dir}: a benchmark project (people take the tasks); serve it with "
                          "rescue.human.app.create_app, as `rescue review serve` does")
    project = project_dir if isinstance(project_dir, Project) else load_project(project_dir)
    modules = (login, users, rows, media, segments, search, agreement, export, pages)  # before segments' catch-all GET
    return app_around(project, db_url, [module.router for module in modules])


def app_around(project: ServedProject, db_url: str | None, routers: list[APIRouter]) -> FastAPI:
    """The app around ``routers``: database, login throttle, templates, static files, error answers, body limit
    and security headers (a verification project's, and the human reference's benchmark project's, alike)."""
    engine = make_engine(db_url or default_url(project.root))
    # The OpenAPI schema is served behind the login like every other route (below), not by FastAPI itself.
    app = FastAPI(title="rescue review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.project = project
    app.state.engine = engine
    app.state.sessions = session_factory(engine)
    app.state.login_throttle = LoginThrottle()
    app.state.templates = Jinja2Templates(directory=str(HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    for router in routers:
        app.include_router(router)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        # Pages link /static/favicon.svg; a browser showing a JSON answer or a download still asks for this.
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")

    @app.get("/api/openapi.json", include_in_schema=False)
    def openapi(actor: CurrentUser) -> dict[str, Any]:
        return app.openapi()

    _answer_errors(app)

    # Inside the security headers (a 413 carries them too), outside everything that reads a body.
    app.add_middleware(BodyLimit)

    @app.middleware("http")
    async def security_headers(request: Request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if not request.url.path.startswith("/static/"):  # pages and API answers carry data: never cached
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app


def _answer_errors(app: FastAPI) -> None:
    """How errors reach the client: a login page, a JSON detail, 507 for a full disk, 422 for what cannot be stored."""

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: LoginRequired) -> Response:
        return RedirectResponse(exc.next_url, status_code=303)

    @app.exception_handler(UnstorableBody)
    async def unstorable_body(request: Request, exc: UnstorableBody) -> Response:
        # Refused while the body is read, before any route runs: nothing of the request was stored.
        return JSONResponse({"detail": "this request holds what cannot be stored; nothing was saved",
                             "problems": exc.problems}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        detail = exc.detail
        body = {"detail": detail["message"], **{k: v for k, v in detail.items() if k != "message"}} \
            if isinstance(detail, dict) else {"detail": detail}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    async def disk_full(request: Request, exc: Exception) -> Response:
        if not is_disk_full(exc):
            raise exc
        # 507 Insufficient Storage: the transaction rolled back, nothing half-written; the page keeps the edit.
        return JSONResponse({"detail": "the server's disk is full, so this change was not saved (nothing stored "
                                       "was lost). Your edit is kept in this browser: save again once an "
                                       "administrator has freed space"}, status_code=507)

    app.add_exception_handler(OSError, disk_full)
    app.add_exception_handler(OperationalError, disk_full)

    @app.exception_handler(StoredValueError)
    async def stored_value(request: Request, exc: StoredValueError) -> Response:
        # The database holds what rescue did not store (edited by hand): the server's fault, named, not a crash.
        return JSONResponse({"detail": str(exc)}, status_code=500)

    @app.exception_handler(DataError)
    async def unstorable(request: Request, exc: DataError) -> Response:
        # A value the database refuses (PostgreSQL is stricter than SQLite); the request's own fault, not a crash.
        return JSONResponse({"detail": f"the database cannot store a value of this request: {exc.orig}"}, status_code=422)
