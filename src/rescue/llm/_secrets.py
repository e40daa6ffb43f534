"""The one place configured keys are masked: :func:`scrub` runs over every answer text and error text the
model layer hands on, before anything is cut, logged, cached or returned.

Every key the layer is configured with (:func:`register`) is masked in every form an endpoint may echo:
whole, behind ``Bearer``, any run of 8 or more of its characters (a prefix at a cut, a suffix after one),
percent-encoded, and base64-encoded at any position (``Basic base64(user:KEY)``). Masking always happens
before cutting (:func:`clip`), so a cut never leaves part of a key behind.

Keys in endpoint URLs (``http://user:KEY@host/v1``, ``...?api_key=KEY``) are keys like any other:
:func:`register_url` registers them and :func:`redact_url` is the form of a URL that may be stored or shown.
A key shorter than :data:`MIN_KEY` characters is not masked (masking a 5-character key that is also a word
would change answers); :func:`refused_notes` says so, once per key, for the caller to warn with.
"""

from __future__ import annotations

import base64
import re
import threading
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

MASK = "***"
# Shorter fragments of a key are too likely to occur in ordinary text; 8 characters of a key are not.
FRAGMENT = 8
# Keys of local servers that accept anything; masking them would mangle ordinary words.
_NOT_SECRET = {"EMPTY", "none", "None", "test", ""}
# A shorter key is refused for masking: its text is too likely to be part of an answer.
MIN_KEY = 16
# Query parameters of an endpoint URL whose values are secrets.
_SECRET_PARAM = re.compile(r"key|token|secret|sig|passw|pwd|auth|credential|session|code", re.IGNORECASE)

_lock = threading.Lock()
_keys: set[str] = set()
_fragment_cache: list[str] | None = None
_refused: dict[str, bool] = {}  # short key -> whether its note was taken already


def register(key: str | None) -> bool:
    """Treat ``key`` as a secret from now on, in this process; False when it is too short to mask."""
    global _fragment_cache
    if key is None:
        return False
    key = key.strip()
    if key in _NOT_SECRET:
        return False
    with _lock:
        if len(key) < MIN_KEY:
            _refused.setdefault(key, False)
            return False
        if key not in _keys:
            _keys.add(key)
            _fragment_cache = None
    return True


def refused_notes() -> list[str]:
    """One warning per key refused for masking since the last call (never quoting the key)."""
    with _lock:
        fresh = [key for key, told in _refused.items() if not told]
        for key in fresh:
            _refused[key] = True
    return [f"a configured API key has only {len(key)} characters: it is not masked in answers, errors or logs "
            f"(masking so short a text would change answers that contain it); keys of {MIN_KEY} or more "
            "characters are masked" for key in fresh]


def register_url(url: str | None) -> None:
    """Register the secrets an endpoint URL carries: its user info and secret query values."""
    if not url:
        return
    parts = urlsplit(url.strip())
    for secret in (parts.username, parts.password):
        if secret:
            register(secret)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and (_SECRET_PARAM.search(name) or len(value) >= MIN_KEY):
            register(value)


def redact_url(url: str | None) -> str | None:
    """``url`` as it may be stored or shown: user info replaced by ``***``, secret query values by ``***``."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(name, MASK if value and (_SECRET_PARAM.search(name) or len(value) >= MIN_KEY) else value)
                           for name, value in pairs], safe="*")
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def _encoded_forms(key: str) -> set[str]:
    """The key percent-encoded, and the part of its base64 encoding that does not depend on what surrounds
    it, at each of the three byte alignments (``base64(user:KEY)`` holds one of them), standard and URL-safe."""
    forms = {quote(key, safe="")}
    raw = key.encode("utf-8")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        core = encoded[4 if offset else 0 : ((offset + len(raw)) // 3) * 4]
        if len(core) >= FRAGMENT:
            forms.update({core, core.replace("+", "-").replace("/", "_")})
    forms.discard(key)
    return forms


def _fragments() -> list[str]:
    global _fragment_cache
    with _lock:
        if _fragment_cache is None:
            fragments: set[str] = set()
            for key in _keys:
                if len(key) <= FRAGMENT:
                    fragments.add(key)
                else:
                    fragments.update(key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1))
                fragments.update(_encoded_forms(key))
            _fragment_cache = sorted(fragments)
        return _fragment_cache


def _spans(text: str) -> list[tuple[int, int]]:
    """The merged character spans of ``text`` covered by key fragments (str.find: fast on megabytes)."""
    spans: list[tuple[int, int]] = []
    for fragment in _fragments():
        at = text.find(fragment)
        while at != -1:
            spans.append((at, at + len(fragment)))
            at = text.find(fragment, at + 1)
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def scrub(text: str, extra: list[str] | None = None) -> str:
    """``text`` with every registered key (and ``extra`` ones) masked in every form."""
    for key in extra or []:
        register(key)
    if not text or not _keys:
        return text
    spans = _spans(text)
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


def clip(text: str, limit: int) -> str:
    """Mask first, then cut to ``limit`` characters."""
    cleaned = scrub(text)
    return cleaned if len(cleaned) <= limit else cleaned[:limit] + "…"
