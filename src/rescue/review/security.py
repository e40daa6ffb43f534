"""Passwords (argon2), login sessions (random tokens stored hashed) and CSRF tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

if TYPE_CHECKING:  # the ASGI types, for annotations only
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
    """The argon2 hash of ``password``."""
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Whether ``password`` matches the hash (False for a malformed hash)."""
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
    """Limits password guessing per client address and per name, without locking the real user out.

    A client may have at most ``client_failures`` failed (or still running) logins in ``window_seconds``, whatever
    the names it tries: spraying many names meets the limit. A name that collected ``failures`` failures refuses
    further guesses, but only from clients that have failed themselves: a client with no recent failure (the
    real user at their own machine) is always let through to the password check, so an attacker's failures
    never lock out a correct password. :meth:`begin` counts an attempt before its password is checked and
    under one lock, so parallel guesses cannot all pass the check before any of them has failed.
    """

    def __init__(self, failures: int = 10, window_seconds: float = 300.0, client_failures: int | None = None):
        self.failures, self.window = failures, window_seconds
        # Per address more than per name: a few people behind one address may each mistype a few times.
        self.client_failures = 2 * failures if client_failures is None else client_failures
        self._by_client: dict[str, list[float]] = {}
        self._by_name: dict[str, list[float]] = {}
        self._pending: dict[str, int] = {}  # client or name -> attempts being checked now
        self._lock = threading.Lock()

    def _recent(self, table: dict[str, list[float]], key: str, now: float) -> list[float]:
        kept = [t for t in table.get(key, []) if now - t < self.window]
        if kept:
            table[key] = kept
        else:
            table.pop(key, None)
        return kept

    def begin(self, client: str, name: str) -> str | None:
        """Reserve one attempt; the reason it is refused (for a 429), or None: go on, then call :meth:`end`."""
        with self._lock:
            now = time.monotonic()
            own = len(self._recent(self._by_client, client, now)) + self._pending.get("c:" + client, 0)
            if own >= self.client_failures:
                return "too many failed logins from this address; wait a few minutes"
            against = len(self._recent(self._by_name, name, now)) + self._pending.get("n:" + name, 0)
            if own and against >= self.failures:
                return "too many failed logins for this name; wait a few minutes"
            for key in ("c:" + client, "n:" + name):
                self._pending[key] = self._pending.get(key, 0) + 1
            return None

    def end(self, client: str, name: str, ok: bool) -> None:
        """A login attempt finished: free its places, and count a failure against the client and the name."""
        with self._lock:
            for key in ("c:" + client, "n:" + name):
                left = self._pending.get(key, 1) - 1
                if left > 0:
                    self._pending[key] = left
                else:
                    self._pending.pop(key, None)
            if not ok:
                now = time.monotonic()
                self._by_client.setdefault(client, []).append(now)
                self._by_name.setdefault(name, []).append(now)


def new_token() -> str:
    """A new random token (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The SHA-256 of a token: what the database keeps instead of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    """Whether two secrets are equal, compared in constant time."""
    return hmac.compare_digest(a.encode(), b.encode())


def expiry() -> str:
    """When a login made now expires."""
    return (datetime.now(UTC) + timedelta(hours=SESSION_HOURS)).isoformat(timespec="seconds")


def expired(when: str) -> bool:
    """Whether the time ``when`` has passed."""
    return datetime.fromisoformat(when) < datetime.now(UTC)


# --- request bodies ------------------------------------------------------------------------------------------

# The most a request body may hold, by path: a login is a name and a password; a save is one row (the release's
# longest text is under 1,000 characters; a row with every list full stays far below this).
LOGIN_BODY_BYTES = 4 * 1024
BODY_BYTES = 256 * 1024
# The longest text one field may hold (names, passwords, a row's texts): ten times the longest in the release.
MAX_TEXT_CHARS = 10_000


def body_limit(path: str) -> int:
    """The most bytes a request body to ``path`` may hold (a login's limit is smaller)."""
    return LOGIN_BODY_BYTES if path.rstrip("/") == "/api/login" else BODY_BYTES


class BodyLimit:
    """ASGI middleware: a request body over :func:`body_limit` is answered 413 before it is read (a declared
    Content-Length) or as soon as it passes the limit (a chunked body): before the login check, the CSRF
    check and the route, so neither an anonymous client nor a logged-in one can make the server hold it."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope.get("path", ""))
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _too_large(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            size += len(message.get("body", b""))
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: a disconnect, when it comes

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    import json

    body = json.dumps({"detail": f"the request body is larger than this route accepts ({limit:,} bytes)"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
