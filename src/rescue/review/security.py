"""Passwords (argon2), login sessions (random tokens stored hashed) and CSRF tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

SESSION_COOKIE = "rescue_session"
CSRF_HEADER = "X-CSRF-Token"
SESSION_HOURS = 12
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

_hasher = PasswordHasher()


def set_hash_cost(time_cost: int, memory_cost_kib: int) -> None:
    """Argon2 cost of new hashes (each hash records its own, so old ones still verify). The defaults
    suit a server; tests lower them because they create accounts by the dozen."""
    global _hasher
    _hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost_kib, parallelism=1)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


_dummy_hash: str | None = None


def burn_time(password: str) -> None:
    """Verify against a throwaway hash, so a login takes as long whether or not the account exists."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password(secrets.token_hex(8))
    verify_password(_dummy_hash, password)


class LoginThrottle:
    """Refuses logins to a name after too many recent failures, so a password cannot be guessed online."""

    def __init__(self, failures: int = 10, window_seconds: float = 300.0):
        self.failures, self.window = failures, window_seconds
        self._seen: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, name: str, now: float) -> list[float]:
        kept = [t for t in self._seen.get(name, []) if now - t < self.window]
        self._seen[name] = kept
        return kept

    def blocked(self, name: str) -> bool:
        with self._lock:
            return len(self._recent(name, time.monotonic())) >= self.failures

    def failed(self, name: str) -> None:
        with self._lock:
            self._recent(name, time.monotonic()).append(time.monotonic())

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._seen.pop(name, None)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def expiry() -> str:
    return (datetime.now(UTC) + timedelta(hours=SESSION_HOURS)).isoformat(timespec="seconds")


def expired(when: str) -> bool:
    return datetime.fromisoformat(when) < datetime.now(UTC)
