"""Text shown to people, from data they did not write: control characters and lone surrogates escaped,
NaN/Infinity made JSON-safe, LaTeX specials escaped; and the one clock-time form (WebVTT's HH:MM:SS.mmm). A leaf of ``rescue.data``."""

from __future__ import annotations

import re
import unicodedata

# One regular-expression search (in C), not a check per character in Python: every loaded text passes here.
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_safe(value: object) -> object:
    """``value`` with every NaN/±Infinity float replaced by None, so ``json.dumps(allow_nan=False)`` writes JSON."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def without_lone_surrogates(text: str) -> str:
    """``text`` with every lone UTF-16 surrogate (``\\ud800``, as a JSON escape can carry) replaced by U+FFFD,
    so it can be encoded as UTF-8 (stored, written, sent); a split surrogate pair is joined into its character."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def deep_without_lone_surrogates(value: object) -> object:
    """``value`` (JSON data) with :func:`without_lone_surrogates` applied to every string, keys included."""
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict):
        return {without_lone_surrogates(str(k)): deep_without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_without_lone_surrogates(v) for v in value]
    return value


def _escape_char(char: str) -> str:
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible_words(text: str) -> bool:
    """Whether ``text`` shows anything: a character that is neither a space nor a control, format or surrogate
    character (a zero-width space, a joiner, a BOM and a NUL show nothing)."""
    return any(not char.isspace() and unicodedata.category(char) not in ("Cc", "Cs", "Cf", "Zs", "Zl", "Zp")
               for char in text)


def visible_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` with control, format and surrogate characters written as escapes (``\\x1b``, ``\\n``, ``\\ud800``).

    Printable text, non-Latin scripts included, is kept as it is. ``max_length`` cuts long texts with ``…``.
    """
    out = []
    for char in text:
        category = unicodedata.category(char)
        out.append(_escape_char(char) if category in ("Cc", "Cs", "Cf", "Zl", "Zp") else char)
    shown = "".join(out)
    if max_length is not None and len(shown) > max_length:
        shown = shown[: max_length - 1] + "…"
    return shown


def markdown_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` for one Markdown table cell: one line, no raw HTML, no column break."""
    shown = visible_text(text, max_length=max_length)
    # Only what could open a tag or an entity is escaped: "p < 0.05" stays readable in the .md file itself.
    shown = _ENTITY_START.sub("&amp;", shown)
    shown = _TAG_START.sub("&lt;", shown)
    for raw, safe in (("|", "\\|"), ("`", "\\`")):
        shown = shown.replace(raw, safe)
    return shown


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")  # <b>, </x>, <!-- ... -->, <?x: never "< 0.05" or "a <= b"


_ENTITY_START = re.compile(r"&(?=#?\w+;)")  # &lt; &#60; as text, not as the characters they name


_LATEX_SPECIALS = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                   "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                   "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def latex_text(text: str) -> str:
    """``text`` for LaTeX: every special character escaped, controls and line breaks shown as escapes."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in visible_text(text))


def clock_time(seconds: float) -> str:
    """``seconds`` as WebVTT's ``HH:MM:SS.mmm``, rounded to the millisecond: the one form subtitles, build
    messages and test projects write times in. A negative time keeps its sign (``-00:00:01.500``) so that a
    message about a bad time shows it; WebVTT documents clamp at zero before calling this."""
    millis = round(seconds * 1000)
    sign = "-" if millis < 0 else ""
    hours, rest = divmod(abs(millis), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"
