"""Mis-encoded text (mojibake) in the release: finding it and repairing it with ftfy.

The release contains UTF-8 punctuation that was decoded as Latin-1 somewhere upstream, so "—" reads as
"â" followed by the C1 controls U+0080 U+0094. ftfy knows these round trips; we only switch on the fixes
that undo encoding damage, because its other clean-ups (uncurling quotes, ligatures, width folding) would
rewrite correct text.
"""

from __future__ import annotations

import json
from pathlib import Path
from functools import cache
from typing import TYPE_CHECKING, Any

from rescue.atomic import atomic_output, write_atomic
from rescue.errors import RescueError

if TYPE_CHECKING:
    import ftfy


@cache
def _encoding_only() -> ftfy.TextFixerConfig:
    # ftfy is imported on first use (its import is heavy): only text that is not ASCII ever needs it (the review
    # server's first page and an ASCII-only dataset never do).
    import ftfy

    return ftfy.TextFixerConfig(
        unescape_html=False,
        remove_terminal_escapes=False,
        fix_latin_ligatures=False,
        fix_character_width=False,
        uncurl_quotes=False,
        fix_line_breaks=False,
        remove_control_chars=False,
        normalization=None,
        explain=False,
    )


def fix_text(text: str) -> str:
    """``text`` with encoding damage undone; anything else is left exactly as it was."""
    if text.isascii():  # mojibake always involves non-ASCII characters; this keeps validation fast
        return text
    import ftfy

    return ftfy.fix_text(text, _encoding_only())


def non_ascii_strings(value: Any) -> list[tuple[str, str]]:
    """Every non-ASCII string inside a JSON value, with its path (``rows[3].internal_emotion[0].emotion_description``).

    Validation walks every string of the release, so this is on the hot path: paths are built only for
    the rare strings that are returned, and leaves are tested without a function call each.
    """
    found: list[tuple[tuple[str | int, ...], str]] = []
    _walk(value, (), found)
    return [(_path(parts), text) for parts, text in found]


def _walk(node: Any, parts: tuple[str | int, ...], found: list[tuple[tuple[str | int, ...], str]]) -> None:
    items = node.items() if type(node) is dict else enumerate(node)
    for key, item in items:
        kind = type(item)
        if kind is str:
            if not item.isascii():
                found.append(((*parts, key), item))
        elif kind is dict or kind is list:
            _walk(item, (*parts, key), found)


def _path(parts: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def fix_value(value: Any) -> Any:
    """A copy of a JSON value with every string repaired; key order is kept."""
    if isinstance(value, str):
        return fix_text(value)
    if isinstance(value, dict):
        return {key: fix_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [fix_value(item) for item in value]
    return value


def fix_jsonl_file(source: Path, dest: Path) -> int:
    """Write ``source`` to ``dest`` with mojibake repaired; returns the number of lines changed.

    Lines that are not valid JSON are copied unchanged, so that fixing never hides a different problem.
    """
    if source.resolve() == dest.resolve():
        raise RescueError(f"{source}: --fix never overwrites its input; choose another output path")
    changed = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(dest) as tmp, source.open(encoding="utf-8") as reader, tmp.open("w", encoding="utf-8") as writer:
        for line in reader:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                writer.write(line)
                continue
            fixed = fix_value(record)
            if fixed != record:
                changed += 1
                line = json.dumps(fixed, ensure_ascii=False) + "\n"
            writer.write(line)
    return changed


def fix_json_file(source: Path, dest: Path) -> bool:
    """Repair one per-sample ``.json`` file into ``dest``; returns whether anything changed."""
    if source.resolve() == dest.resolve():
        raise RescueError(f"{source}: --fix never overwrites its input; choose another output path")
    text = source.read_text(encoding="utf-8")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        write_atomic(dest, text)
        return False
    fixed = fix_value(record)
    if fixed == record:
        write_atomic(dest, text)
        return False
    write_atomic(dest, json.dumps(fixed, ensure_ascii=False, indent=2) + "\n")
    return True


def default_fixed_path(source: Path) -> Path:
    """Where ``--fix`` writes when no output is given: next to the input, never over it."""
    if source.is_dir():
        return source.with_name(source.name + ".fixed")
    return source.with_name(f"{source.stem}.fixed{source.suffix}")


def fix_path(source: Path, dest: Path | None = None) -> tuple[Path, int]:
    """Repair a .jsonl file, a .json file or a folder of them into ``dest``; returns (dest, records changed).

    A folder is mirrored file by file (other files are not copied), so the result loads like the input.
    """
    dest = dest or default_fixed_path(source)
    if source.is_file():
        if source.suffix == ".json":
            return dest, int(fix_json_file(source, dest))
        return dest, fix_jsonl_file(source, dest)
    if dest.resolve().is_relative_to(source.resolve()):
        raise RescueError(f"{dest}: the output folder must not be inside the input folder {source}")
    changed = 0
    for file in sorted(source.rglob("*.json*")):
        target = dest / file.relative_to(source)
        if file.suffix == ".jsonl":
            changed += fix_jsonl_file(file, target)
        elif file.suffix == ".json":
            changed += fix_json_file(file, target)
    return dest, changed
