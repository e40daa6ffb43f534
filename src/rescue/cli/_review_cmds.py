"""``rescue review``: serve the verification tool, manage accounts and assignment, export the verified data.

Thin commands over :mod:`rescue.review`; FastAPI and SQLAlchemy are imported only when a review command runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rescue.atomic import check_target
from rescue.cli._app import RescueTyper, app, console
from rescue.cli._human_run import export_human_run
from rescue.cli._startup import (
    data_reading,
    human_app,
    human_benchmark,
    human_store,
    review_crud,
    review_db,
    review_export,
    review_models,
    review_project,
    review_server,
    rich_table,
    sqlalchemy,
    uvicorn,
)
from rescue.display import terminal_text
from rescue.errors import ReviewError

review_app = RescueTyper(help="Verify drafts in the browser: serve, accounts, assignment, export.", no_args_is_help=True)
user_app = RescueTyper(help="Accounts of the review tool.", no_args_is_help=True)
review_app.add_typer(user_app, name="user")
app.add_typer(review_app, name="review")

DirArgument = Annotated[Path, typer.Argument(metavar="DIR", help="What `rescue build` wrote, or a folder holding a release-format draft.jsonl.", show_default=False)]
DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy database URL (e.g. postgresql+psycopg://...). Default: sqlite DIR/review.db in WAL mode.")]


def _db(directory: Path, db: str | None):  # type: ignore[no-untyped-def]
    benchmark = review_project.is_benchmark(directory)
    if benchmark:  # imported for its effect, not deferred: its tables exist before make_engine creates them
        import rescue.human.store  # noqa: F401
    project = human_benchmark.load_benchmark(directory) if benchmark else review_project.load_project(directory)
    engine = review_db.make_engine(db or review_db.default_url(project.root))
    return project, review_db.session_factory(engine)()


def _stdin_password() -> str:
    """The first line of standard input, which must be UTF-8 (the password is hashed as UTF-8, so it must be
    typed the same way at the login page)."""
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
    application = (human_app.create_app(directory, db) if review_project.is_benchmark(directory)
                   else review_server.create_app(directory, db))
    with application.state.sessions() as session:
        if session.scalar(sqlalchemy.select(review_models.User.id).limit(1)) is None:
            console.print(f"[yellow]note:[/] no accounts yet; add one with `rescue review user add {directory} NAME "
                          "--role admin --password-stdin`", highlight=False)
    served = application.state.project
    what = (f"{sum(len(v) for v in served.instances.values())} benchmark instances" if hasattr(served, "instances")
            else f"{len(served.segments)} segments")
    console.print(f"Serving {what} on http://{host}:{port}/", highlight=False)
    uvicorn.run(application, host=host, port=port, log_level="warning")


@user_app.command("add")
def user_add(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    role: Annotated[str, typer.Option("--role", help="annotator, adjudicator or admin.")] = "annotator",
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from the first line of standard input.")] = False,
    group: Annotated[str | None, typer.Option("--group", help="Benchmark projects: the group the person takes it in (e.g. clinicians); the report gives each group an average-person and a panel row.")] = None,
    db: DbOption = None,
) -> None:
    """Add an account (the password is stored hashed with argon2)."""
    benchmark = review_project.is_benchmark(directory)
    if group is not None and not benchmark:
        raise ReviewError("--group: only a benchmark project groups people (`rescue review init --benchmark`)")
    if benchmark:
        human_store.check_person_name(name)
    if group is not None:
        human_store.check_group(group)
    if password_stdin:
        password = _stdin_password()
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    _, session = _db(directory, db)
    with session:
        user = review_crud.create_user(session, "cli", name, role, password)
        if group is not None:
            human_store.set_group(session, "cli", user.name, group)
    console.print(f"Added {terminal_text(user.name)} ({terminal_text(user.role)}" + (f", group {group}" if group else "") + ")",
                  highlight=False)


@user_app.command("list")
def user_list(directory: DirArgument, db: DbOption = None) -> None:
    """List the accounts: name, role, created, and whether disabled."""
    _, session = _db(directory, db)
    with session:
        users = review_crud.list_users(session)
    table = rich_table.Table("name", "role", "created", "status")
    for user in users:
        table.add_row(*(terminal_text(str(cell)) for cell in (
            user["name"], user["role"], user["created_at"],
            f"disabled {user['disabled_at']}" if user["disabled"] else "active")))
    console.print(table)


@user_app.command("passwd")
def user_passwd(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Set a new password, read from the first line of standard input; the account's sessions end."""
    password = _stdin_password()
    _, session = _db(directory, db)
    with session:
        review_crud.set_password(session, "cli", name, password)
    console.print(f"New password set for {terminal_text(name)}; their sessions have ended", highlight=False)


@user_app.command("disable")
def user_disable(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Disable an account: no more logins, its sessions end; its copies, comments and audit stay."""
    _, session = _db(directory, db)
    with session:
        review_crud.set_disabled(session, "cli", name, True)
    console.print(f"Disabled {terminal_text(name)} (their work and audit are kept; `rescue review user enable` undoes it)",
                  highlight=False)


@user_app.command("enable")
def user_enable(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(help="Login name.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Enable a disabled account again."""
    _, session = _db(directory, db)
    with session:
        review_crud.set_disabled(session, "cli", name, False)
    console.print(f"Enabled {terminal_text(name)}", highlight=False)


@review_app.command("assign")
def assign(
    directory: DirArgument,
    k: Annotated[int | None, typer.Option("--k", min=1, help="Annotators per segment (overlap; default 1), or people per instance of a benchmark (default: its --per-instance).")] = None,
    annotators: Annotated[list[str] | None, typer.Option("--annotator", help="Who to assign (repeat); default: every annotator account.")] = None,
    db: DbOption = None,
) -> None:
    """Give every segment (or benchmark instance) to k annotators, spreading the load evenly; replaces any earlier
    assignment."""
    project, session = _db(directory, db)
    if review_project.is_benchmark(directory):
        with session:
            given = human_store.assign(session, "cli", project, k, annotators)
        console.print(f"Assigned {sum(len(v) for v in project.instances.values())} instances with "
                      f"{k or project.per_instance} people each: "
                      + terminal_text(", ".join(f"{n} {c}" for n, c in sorted(given.items()))),
                      highlight=False)
        return
    k = k or 1
    with session:
        plan = review_crud.assign(session, "cli", project, k, annotators)
    load: dict[str, int] = {}
    for names in plan.values():
        for name in names:
            load[name] = load.get(name, 0) + 1
    console.print(f"Assigned {len(plan)} segments with overlap {k}: "
                  + terminal_text(", ".join(f"{n} {c}" for n, c in sorted(load.items()))), highlight=False)


@review_app.command("init")
def init(
    directory: DirArgument,
    benchmark: Annotated[bool, typer.Option("--benchmark", help="A project in which people take the benchmark (the only kind init makes).")] = False,
    data: Annotated[Path | None, typer.Option("--data", help="The release-format JSONL whose instances people answer. Default: the bundled demo dataset (as `rescue run`).")] = None,
    tasks: Annotated[str, typer.Option("--tasks", help="Comma-separated tasks, e.g. itp,rpp,stp,ssp,er,vp.")] = "itp,rpp,stp,ssp,er,vp",
    per_instance: Annotated[int, typer.Option("--per-instance", help="People who answer each instance (blind to each other).")] = 2,
    mode: Annotated[str, typer.Option("--mode", help="The mode prompts are rendered in, as `rescue run --mode` (video modes show the frames a model gets).")] = "dialogue",
    media_root: Annotated[Path | None, typer.Option("--media-root", help="Video modes: the folder of the sessions' videos, as `rescue run --media-root`.")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="Keep N instances of each task, stratified by scenario and session group (recorded in benchmark.json); default: every instance.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="With --sample: the seed of the draw (the same data, tasks and seed give the same instances).")] = 0,
) -> None:
    """Make a benchmark project: people answer the tasks' instances in the browser (then user add, assign, serve)."""
    if not benchmark:
        raise ReviewError("rescue review init makes benchmark projects: give --benchmark (and --data FILE, or "
                          "none for the bundled demo dataset; a verification project is what `rescue build` writes)")
    source = data if data is not None else data_reading.demo_path()
    config = human_benchmark.init_benchmark(directory, source, tasks.split(","), per_instance, mode, media_root, sample, seed)
    drawn = f" (drawn from {sum(config['sample']['of'].values())}, stratified, seed {seed})" if "sample" in config else ""
    console.print(f"Made the benchmark project {directory}: " + ", ".join(f"{t.upper()} {n}" for t, n in config["instances"].items())
                  + f" instances{drawn}, {per_instance} people each. Next: `rescue review user add`, `rescue review assign "
                  f"{directory}`, `rescue review serve {directory}`", highlight=False)


@review_app.command("export")
def export(
    directory: DirArgument,
    out: Annotated[Path | None, typer.Option("--out", help="The verified JSONL to write (release format).")] = None,
    as_run: Annotated[Path | None, typer.Option("--as-run", help="Benchmark projects: write a run folder with a system per person (human/NAME) and human/pooled, scored like any model.")] = None,
    bertscore: Annotated[bool, typer.Option("--bertscore/--no-bertscore", help="--as-run: BERTScore for ER/VP.")] = True,
    judges: Annotated[list[str] | None, typer.Option("--judge", help="--as-run: a judge model for ER/VP (repeat), as `rescue run --judge`.")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="--as-run: an OpenAI-compatible endpoint for the judges, as `rescue run --judge-base-url`.")] = None,
    db: DbOption = None,
) -> None:
    """Write the verified, non-discarded segments (release format) and OUT's .provenance.json sidecar; for a
    benchmark project, --as-run writes people's answers as a run folder that `rescue report` reads."""
    if as_run is not None:
        export_human_run(directory, as_run, bertscore=bertscore, judges=judges or [], judge_base_url=judge_base_url, db=db)
        return

    if out is None or review_project.is_benchmark(directory):
        raise ReviewError(f"{directory}: a benchmark project exports its answers as a run: give --as-run FOLDER"
                          if review_project.is_benchmark(directory) else
                          "give --out FILE (verified JSONL) or, for a benchmark project, --as-run FOLDER")

    check_target(out)  # before any work: a FIFO, a device, a folder or a link at --out is refused
    project, session = _db(directory, db)
    with session:
        count, sidecar = review_export.write_export(session, project, out)
    console.print(f"Wrote {count} verified segment(s) to {out} and provenance to {sidecar}", highlight=False)
