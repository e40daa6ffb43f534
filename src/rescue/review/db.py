"""Database engine and sessions. SQLite in WAL mode by default (readers never wait for the writer);
any SQLAlchemy URL with ``--db``; PostgreSQL is tested (``postgresql://USER:PASSWORD@HOST:PORT/DB`` with the
``review-pg`` extra, psycopg 3)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from rescue.review.models import ADDED_COLUMNS, Base
from rescue.data.readback import parse_json
from rescue.errors import DatabaseError as DatabaseError, StoredValueError

DB_FILE = "review.db"


def default_url(root: Path) -> str:
    """The SQLite database in the project folder, as a SQLAlchemy URL."""
    return f"sqlite:///{(Path(root) / DB_FILE).resolve()}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # durable across a crash of the app in WAL mode
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def resolve_url(url: str) -> str:
    """``url`` with PostgreSQL's driver filled in: a bare ``postgresql://`` (or ``postgres://``) means psycopg 3,
    the driver of the ``review-pg`` extra, unless only psycopg2 (SQLAlchemy's own default) is installed."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("postgresql", "postgres"):
        if importlib.util.find_spec("psycopg") is not None or importlib.util.find_spec("psycopg2") is None:
            return f"postgresql+psycopg://{rest}"
        return f"postgresql://{rest}"
    return url


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the tables created; a bad URL, a missing driver or an unreachable server is
    a DatabaseError naming the URL (without its password)."""
    url = resolve_url(url)
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 10}, pool_size=16,
                                   max_overflow=16)
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=16, max_overflow=16)
        Base.metadata.create_all(engine)
        _add_missing_columns(engine)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise DatabaseError(f"--db {_shown(url)}: not a usable SQLAlchemy URL ({exc})") from None
    except ModuleNotFoundError as exc:
        raise DatabaseError(f"--db {_shown(url)}: the database driver is not installed ({exc.name}); "
                            f"pip install it (for PostgreSQL: pip install 'rescue-bench[review-pg]')") from None
    except OperationalError as exc:
        raise DatabaseError(f"--db {_shown(url)}: cannot open the database ({exc.orig})") from None
    return engine


def _add_missing_columns(engine: Engine) -> None:
    """Bring a database made by an earlier version up to the current tables (create_all adds only tables)."""
    def missing() -> list[tuple[str, str, str]]:
        inspector = inspect(engine)
        return [(table, column, kind) for table, column, kind in ADDED_COLUMNS
                if column not in {c["name"] for c in inspector.get_columns(table)}]

    todo = missing()
    if not todo:
        return
    try:
        with engine.begin() as connection:
            for table, column, kind in todo:
                connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {kind}"))
    except DBAPIError:
        if missing():  # not another server starting on the same database at the same moment
            raise


def _shown(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """A maker of database sessions on ``engine`` (objects stay readable after commit)."""
    return sessionmaker(engine, expire_on_commit=False)


def stored_json(text: object, where: str, kind: type | None = None) -> Any:
    """A JSON column read back as every file rescue wrote is (:mod:`rescue.data.readback`), and of ``kind``
    (``dict``, ``list``) when given: :class:`StoredValueError` naming ``where`` (table, column, row) when the
    database holds what rescue did not store."""
    if not isinstance(text, str):
        raise StoredValueError(f"{where}: not text but {type(text).__name__} (not what rescue stored)")
    value = parse_json(text, where, StoredValueError)
    if kind is not None and not isinstance(value, kind):
        raise StoredValueError(f"{where}: a JSON {'object' if kind is dict else 'array'} expected, not "
                               f"{type(value).__name__} (not what rescue stored)")
    return value


def row_values(record: Any) -> dict[str, Any]:
    """A stored row's release-format values (``row_copies.values_json``)."""
    return dict(stored_json(record.values_json, row_where(record.segment_id, record.copy, record.row_index,
                                                          "values_json"), dict))


def row_names(record: Any) -> tuple[list[str], list[str]]:
    """A stored row's accepted fields and acknowledged warning keys (``accepted_json``, ``acknowledged_json``)."""
    return (stored_names(record.accepted_json, row_where(record.segment_id, record.copy, record.row_index,
                                                         "accepted_json")),
            stored_names(record.acknowledged_json or "[]", row_where(record.segment_id, record.copy, record.row_index,
                                                                     "acknowledged_json")))


def stored_names(text: object, where: str) -> list[str]:
    """A JSON column holding a list of names, read back (:func:`stored_json`)."""
    value = stored_json(text, where, list)
    if not all(isinstance(name, str) for name in value):
        raise StoredValueError(f"{where}: names (strings) expected (not what rescue stored)")
    return list(value)


def row_where(segment_id: str, copy: str, row_index: int, column: str) -> str:
    """How a message names one column of one stored row."""
    return f"review database: row_copies.{column} of segment {segment_id!r}, copy {copy!r}, row {row_index}"
