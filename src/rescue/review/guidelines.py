"""The lab's own annotation guidelines: ``guidelines.md`` in the project folder, shown beside the editor.

Rendered here, on the server, with markdown-it in its CommonMark mode with raw HTML switched off: HTML in the
file shows as text, and links to ``javascript:``/``vbscript:``/``file:`` URLs stay plain text (markdown-it's
own link check), so whoever can write the project folder cannot put script into the reviewers' pages. The
page carries the result in an inert ``<template>``; the script clones its nodes and never parses HTML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GUIDELINES_FILE = "guidelines.md"


@dataclass(frozen=True)
class Guidelines:
    """The lab's guidelines.md rendered to HTML, and its path in the project."""

    path: str  # as shown to the reader: relative to the project folder
    html: str  # empty when the project has no guidelines file


_cache: dict[Path, tuple[float, int, Guidelines]] = {}


def load_guidelines(root: Path) -> Guidelines:
    """The rendered guidelines of the project at ``root`` (read again whenever the file changes)."""
    path = root / GUIDELINES_FILE
    try:
        stat = path.stat()
    except OSError:
        return Guidelines(GUIDELINES_FILE, "")
    cached = _cache.get(path)
    if cached and cached[:2] == (stat.st_mtime, stat.st_size):
        return cached[2]
    from markdown_it import MarkdownIt  # only pages that show the panel need it

    text = path.read_text(encoding="utf-8", errors="replace")
    rendered = Guidelines(GUIDELINES_FILE, MarkdownIt("commonmark", {"html": False}).enable("table").render(text))
    _cache[path] = (stat.st_mtime, stat.st_size, rendered)
    return rendered
