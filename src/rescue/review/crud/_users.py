"""Accounts and login sessions (the ``users`` and ``login`` routes, ``rescue review user``).
"""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from rescue.errors import AccountDisabled, ReviewError
from rescue.review import security
from rescue.review.models import FINAL, ROLES, LoginSession, User, now
from rescue.review.crud._write import ACCOUNTS, audit, writing
from rescue.review.shapes import UserView


def create_user(db: Session, actor: str, name: str, role: str, password: str) -> User:
    """Create an account (audited); ReviewError for a bad or taken name, an unknown role or a weak password."""
    if not security.NAME_PATTERN.match(name) or name == FINAL:
        raise ReviewError(f"user name {name!r}: use 1-64 letters, digits, '.', '_' or '-' (and not {FINAL!r})")
    if role not in ROLES:
        raise ReviewError(f"role {role!r}: choose one of {', '.join(ROLES)}")
    password_hash = security.hash_password(_checked_password(password))
    with writing(db, ACCOUNTS):
        # Unique whatever the case: "Ann" and "ann" would be one person to every reader of the audit log.
        taken = db.scalar(select(User.name).where(func.lower(User.name) == name.lower()))
        if taken is not None:
            raise ReviewError(f"user {taken!r} already exists" + (f" (names are unique whatever their case: "
                                                                    f"{name!r} is taken)" if taken != name else ""))
        user = User(name=name, role=role, password_hash=password_hash, created_at=now())
        db.add(user)
        audit(db, actor, "user.add", field="role", new={"name": name, "role": role})
    return user


def _checked_password(password: str) -> str:
    if len(password) < 8:
        raise ReviewError("password: at least 8 characters")
    return password


def list_users(db: Session) -> list[UserView]:
    """Every account: name, role, when created, and whether and when disabled."""
    return [{"name": u.name, "role": u.role, "created_at": u.created_at, "disabled": bool(u.disabled_at),
             "disabled_at": u.disabled_at or None} for u in db.scalars(select(User).order_by(User.name))]


def _user(db: Session, name: str) -> User:
    user = db.scalar(select(User).where(User.name == name))
    if user is None:
        raise ReviewError(f"no user {name!r}")
    return user


def _end_sessions(db: Session, user: User) -> None:
    db.execute(delete(LoginSession).where(LoginSession.user_id == user.id))


def set_password(db: Session, actor: str, name: str, password: str) -> None:
    """A new password; every session of the account ends (whoever knew the old one is logged out)."""
    password_hash = security.hash_password(_checked_password(password))
    with writing(db, ACCOUNTS):
        user = _user(db, name)
        user.password_hash = password_hash
        _end_sessions(db, user)
        audit(db, actor, "user.passwd", field="password", new={"name": name})


def set_disabled(db: Session, actor: str, name: str, disabled: bool) -> None:
    """Disable an account (it can no longer log in and its sessions end; its copies, comments, assignments and
    audit stay as they are) or enable it again."""
    with writing(db, ACCOUNTS):
        user = _user(db, name)
        if bool(user.disabled_at) == disabled:
            return
        user.disabled_at = now() if disabled else ""
        if disabled:
            _end_sessions(db, user)
        audit(db, actor, "user.disable" if disabled else "user.enable", field="disabled", old=not disabled,
              new={"name": name, "disabled": disabled})


def login(db: Session, name: str, password: str) -> tuple[User, str, str] | None:
    """A new session for a right name and password; None otherwise. Raises AccountDisabled (for the right
    password only, so the answer tells a guesser nothing)."""
    user = db.scalar(select(User).where(User.name == name))
    if user is None:
        security.burn_time(password)
        return None
    if not security.verify_password(user.password_hash, password):
        return None
    if user.disabled_at:
        raise AccountDisabled(f"the account {name!r} is disabled; an admin can enable it again")
    token, csrf = security.new_token(), security.new_token()
    with writing(db, None):
        db.add(LoginSession(token_hash=security.token_hash(token), user_id=user.id, csrf=csrf, created_at=now(),
                            expires_at=security.expiry()))
        audit(db, name, "login")
    return user, token, csrf


def logout(db: Session, token: str) -> None:
    """End the login session of ``token``."""
    with writing(db, None):
        db.execute(delete(LoginSession).where(LoginSession.token_hash == security.token_hash(token)))
