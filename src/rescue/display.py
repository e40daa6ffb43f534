"""Text that comes from outside (model ids, sample ids, an endpoint's error body) made safe to show: on a
terminal (:func:`terminal_text`), in a Markdown table cell (:func:`markdown_text`, :func:`markdown_table`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rescue.data.text import visible_text

__all__ = ["markdown_table", "markdown_text", "terminal_text"]


def terminal_text(text: str, *, max_length: int | None = None) -> str:
    """``text`` ready for a rich markup string: controls escaped, ``[...]`` shown literally, never styled."""
    from rich.markup import escape

    return escape(visible_text(text, max_length=max_length))


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


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub Markdown table; every cell through :func:`markdown_text` (one line, no raw HTML, ``|`` escaped)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(str(c)) for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)]) + "\n"
