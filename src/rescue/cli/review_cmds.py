"""``rescue review``: serve the verification tool, manage accounts and assignment, export the verified data.

Thin commands over :mod:`rescue.review`; FastAPI and SQLAlchemy are imported only when a review command runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rescue.cli.app import app, console

review_app = typer.Typer(help="Verify drafts in the browser: serve, accounts, assignment, export.", no_args_is_help=True)
user_app = typer.Typer(help="Accounts of the review tool.", no_args_is_help=True)
review_app.add_typer(user_app, name="user")
app.add_typer(review_app, name="review")

DirArgument = Annotated[Path, typer.Argument(metavar="DIR", help="What `rescue build` wrote, or a folder holding a release-format draft.jsonl.", show_default=False)]
DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy database URL (e.g. postgresql+psycopg://...). Default: sqlite DIR/review.db in WAL mode.")]


def _db(directory: Path, db: str | None):  # type: ignore[no-untyped-def]
    from rescue.review.db import default_url, make_engine, session_factory
    from rescue.review.project import load_project

    project = load_project(directory)
    engine = make_engine(db or default_url(project.root))
    return project, session_factory(engine)()


def _stdin_password() -> str:
    """The first line of standard input, which must be UTF-8 (the password is hashed as UTF-8, so it must be
    typed the same way at the login page)."""
    from rescue.errors import ReviewError

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # already text (a notebook, a test harness)
        return str(sys.stdin.readline()).rstrip("\r\n")
    line: bytes = stream.readline().rstrip(b"\r\n")
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReviewError(f"standard input: the password is not UTF-8 text (byte {exc.start + 1} of the line, "
                          f"{line[exc.start:exc.start + 1]!r}); give it as UTF-8, as a browser sends it") from None


@review_app.command("serve")
def serve(
    directory: DirArgument,
    host: Annotated[str, typer.Option("--host", help="Interface to bind; anything but 127.0.0.1 exposes the tool on the network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8000,
    db: DbOption = None,
) -> None:
    """Serve the review tool (log in with an account made by `rescue review user add`)."""
    import uvicorn

    from rescue.review.app import create_app

    application = create_app(directory, db)
    with application.state.sessions() as session:
        from sqlalchemy import select

        from rescue.review.models import User

        if session.scalar(select(User.id).limit(1)) is None:
            console.print(f"[yellow]note:[/] no accounts yet; add one with `rescue review user add {directory} NAME "
                          "--role admin --password-stdin`", highlight=False)
    console.print(f"Serving {len(application.state.project.segments)} segments on http://{host}:{port}/", highlight=False)
    uvicorn.run(application, host=host, port=port, log_level="warning")


@user_app.command("add")
def user_add(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    role: Annotated[str, typer.Option("--role", help="annotator, adjudicator or admin.")] = "annotator",
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from the first line of standard input.")] = False,
    db: DbOption = None,
) -> None:
    """Add an account (the password is stored hashed with argon2)."""
    from rescue.review import crud

    if password_stdin:
        password = _stdin_password()
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    _, session = _db(directory, db)
    with session:
        user = crud.create_user(session, "cli", name, role, password)
    console.print(f"Added {user.name} ({user.role})", highlight=False)


@user_app.command("list")
def user_list(directory: DirArgument, db: DbOption = None) -> None:
    """List the accounts: name, role, created, and whether disabled."""
    from rich.table import Table

    from rescue.review import crud

    _, session = _db(directory, db)
    with session:
        users = crud.list_users(session)
    table = Table("name", "role", "created", "status")
    for user in users:
        table.add_row(user["name"], user["role"], user["created_at"],
                      f"disabled {user['disabled_at']}" if user["disabled"] else "active")
    console.print(table)


@user_app.command("passwd")
def user_passwd(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Set a new password, read from the first line of standard input; the account's sessions end."""
    from rescue.review import crud

    password = _stdin_password()
    _, session = _db(directory, db)
    with session:
        crud.set_password(session, "cli", name, password)
    console.print(f"New password set for {name}; their sessions have ended", highlight=False)


@user_app.command("disable")
def user_disable(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Disable an account: no more logins, its sessions end; its copies, comments and audit stay."""
    from rescue.review import crud

    _, session = _db(directory, db)
    with session:
        crud.set_disabled(session, "cli", name, True)
    console.print(f"Disabled {name} (their work and audit are kept; `rescue review user enable` undoes it)",
                  highlight=False)


@user_app.command("enable")
def user_enable(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Enable a disabled account again."""
    from rescue.review import crud

    _, session = _db(directory, db)
    with session:
        crud.set_disabled(session, "cli", name, False)
    console.print(f"Enabled {name}", highlight=False)


@review_app.command("assign")
def assign(
    directory: DirArgument,
    k: Annotated[int, typer.Option("--k", min=1, help="Annotators per segment (overlap).")] = 1,
    annotators: Annotated[list[str] | None, typer.Option("--annotator", help="Who to assign (repeat); default: every annotator account.")] = None,
    db: DbOption = None,
) -> None:
    """Give every segment to k annotators, spreading the load evenly; replaces any earlier assignment."""
    from rescue.review import crud

    project, session = _db(directory, db)
    with session:
        plan = crud.assign(session, "cli", project, k, annotators)
    load: dict[str, int] = {}
    for names in plan.values():
        for name in names:
            load[name] = load.get(name, 0) + 1
    console.print(f"Assigned {len(plan)} segments with overlap {k}: "
                  + ", ".join(f"{n} {c}" for n, c in sorted(load.items())), highlight=False)


@review_app.command("export")
def export(
    directory: DirArgument,
    out: Annotated[Path, typer.Option("--out", help="The verified JSONL to write (release format).")],
    db: DbOption = None,
) -> None:
    """Write the verified, non-discarded segments (release format) and OUT's .provenance.json sidecar."""
    from rescue.review.export import write_export

    project, session = _db(directory, db)
    with session:
        count, sidecar = write_export(session, project, out)
    console.print(f"Wrote {count} verified segment(s) to {out} and provenance to {sidecar}", highlight=False)
