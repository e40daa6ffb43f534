"""The one place configured keys are masked: :func:`scrub` runs over every answer text and error text the
model layer hands on, before anything is cut, logged, cached or returned.

Every key the layer is configured with (:func:`register`) is masked in every form an endpoint may echo:
whole, behind ``Bearer``, and any run of 8 or more of its characters (a prefix at a cut, a suffix after
one). Masking always happens before cutting (:func:`clip`), so a cut never leaves part of a key behind.
"""

from __future__ import annotations

import threading

MASK = "***"
# Shorter fragments of a key are too likely to occur in ordinary text; 8 characters of a key are not.
FRAGMENT = 8
# Keys of local servers that accept anything; masking them would mangle ordinary words.
_NOT_SECRET = {"EMPTY", "none", "None", "test", ""}

_lock = threading.Lock()
_keys: set[str] = set()
_fragment_cache: list[str] | None = None


def register(key: str | None) -> None:
    """Treat ``key`` as a secret from now on, in this process."""
    global _fragment_cache
    if key is None:
        return
    key = key.strip()
    if key in _NOT_SECRET or len(key) < 4:
        return
    with _lock:
        if key not in _keys:
            _keys.add(key)
            _fragment_cache = None


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


def contains_secret(text: str) -> bool:
    """Whether any registered key, or 8+ characters of one, occurs in ``text`` (for tests and checks)."""
    return bool(text) and bool(_keys) and bool(_spans(text))
