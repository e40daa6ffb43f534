"""The review database: SQLAlchemy tables. Draft samples stay in the project folder; the database holds
only what people did (accounts, sessions, assignments, row versions, segment states, comments, audit)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

ROLES = ("annotator", "adjudicator", "admin")
FINAL = "final"  # the copy adjudicators write; every other copy is named after its annotator


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Base(DeclarativeBase):
    """The declarative base of the review tables."""

    pass


class User(Base):
    """An account: name, role, password hash, when created and when disabled."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[str] = mapped_column(String(40), default=now)
    # When the account was disabled ("" while active): a disabled person's work and audit stay, the login goes.
    disabled_at: Mapped[str] = mapped_column(String(40), default="")


class LoginSession(Base):
    """A login: the hash of its cookie's token, the user, the CSRF token and when it expires."""

    __tablename__ = "sessions"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[str] = mapped_column(String(40), default=now)
    expires_at: Mapped[str] = mapped_column(String(40))


class Assignment(Base):
    """One annotator assigned to one segment."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("segment_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(Text, index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)


class RowCopy(Base):
    """One copy of one row: an annotator's own version, or the adjudicated final one."""

    __tablename__ = "row_copies"
    __table_args__ = (UniqueConstraint("segment_id", "copy", "row_index"), Index("ix_row_copies_seg", "segment_id", "copy"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(Text)
    copy: Mapped[str] = mapped_column(String(64))
    row_index: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer)
    values_json: Mapped[str] = mapped_column(Text)
    accepted_json: Mapped[str] = mapped_column(Text, default="[]")
    # Keys ("rule@field") of the rulebook's warnings a person knowingly let stand on this row.
    acknowledged_json: Mapped[str] = mapped_column(Text, default="[]")
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[str] = mapped_column(String(40), default=now)


class CopyCut(Base):
    """A copy whose rows were re-cut (split, merged, inserted, deleted): all its rows are then stored in
    row_copies, numbered 1..rows, and no longer follow the draft's numbering. ``revision`` counts the cuts; a
    cut names the revision it started from, like a row save names its version."""

    __tablename__ = "copy_cuts"
    __table_args__ = (UniqueConstraint("segment_id", "copy"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(Text, index=True)
    copy: Mapped[str] = mapped_column(String(64))
    rows: Mapped[int] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(Integer)
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[str] = mapped_column(String(40), default=now)


class SegmentState(Base):
    """Where one copy of a segment stands: open, verified or discarded (with a reason code)."""

    __tablename__ = "segment_states"
    __table_args__ = (UniqueConstraint("segment_id", "copy"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(Text, index=True)
    copy: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(64), default="")
    comment: Mapped[str] = mapped_column(Text, default="")
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[str] = mapped_column(String(40), default=now)


class Comment(Base):
    """A comment on a segment or one of its rows."""

    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    segment_id: Mapped[str] = mapped_column(Text, index=True)
    row_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    author: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[str] = mapped_column(String(40), default=now)


class AuditEntry(Base):
    """Who changed what, when: one entry per field changed (old and new as JSON)."""

    __tablename__ = "audit"
    __table_args__ = (Index("ix_audit_row", "segment_id", "row_index"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[str] = mapped_column(String(40), default=now)
    user: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(32))
    segment_id: Mapped[str] = mapped_column(Text, default="")
    copy: Mapped[str] = mapped_column(String(64), default="")
    row_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    field: Mapped[str] = mapped_column(String(64), default="")
    old_json: Mapped[str] = mapped_column(Text, default="null")
    new_json: Mapped[str] = mapped_column(Text, default="null")


# Columns added after the first release of the tool: (table, column, SQL type and default). make_engine adds
# any of them an existing database lacks, so a lab's review.db keeps working after an upgrade.
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("users", "disabled_at", "VARCHAR(40) NOT NULL DEFAULT ''"),
    ("row_copies", "acknowledged_json", "TEXT NOT NULL DEFAULT '[]'"),
)
