"""Names read from files that become file or folder names (a split of ``splits.json``, a build's group): the one
check that keeps them inside the output folder and portable, :func:`path_name`. An id that must be accepted
whatever it holds (a model, a sample) is made a file name by :func:`rescue.files.safe_filename` instead: a slug
plus a hash."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from rescue.errors import UnsafeNameError as UnsafeNameError
from rescue.data.text import visible_text

__all__ = ["MAX_NAME", "NAME_RULE", "RESERVED_NAMES", "UnsafeNameError", "distinct_path_names", "inside_path",
           "name_problem", "path_name"]

MAX_NAME = 64  # a split or group name; far below every file system's 255 bytes
# Device names Windows reserves in every folder, whatever the extension ("con.txt" is the console too).
RESERVED_NAMES = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))})
NAME_RULE = "use letters, digits, spaces, '.', '_' or '-', starting with a letter or digit"
# Letters of any script are a user's own file names ("séance.mp4"); symbols, separators and look-alikes are not.
_LETTER_CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Nd")
_UNPRINTABLE = ("Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn")


def _character_problem(char: str) -> str:
    if char in "/\\":
        return f"holds the path separator '{char}'"
    if unicodedata.category(char) in _UNPRINTABLE:
        return f"holds the control or invisible character {visible_text(char)}"
    return f"holds {char!r} (U+{ord(char):04X}), which is not a letter, a digit or allowed in a name"


def _allowed(char: str) -> bool:
    if char.isascii():
        return char.isalnum() or char in " ._-"
    return unicodedata.category(char) in _LETTER_CATEGORIES


def name_problem(name: object, max_length: int = MAX_NAME) -> str | None:
    """Why ``name`` cannot be one file or folder name on every system rescue runs on, or None when it can.

    A name is letters (of any script), digits, spaces, ``.``, ``_`` and ``-`` only: that rules out a path (``/``,
    ``\\``, ``..``, an absolute path), NUL and control characters and the invisible ones (a right-to-left override, a
    zero-width joiner). It is in its NFKC form, which refuses the look-alikes (a fullwidth "Ａ" or solidus, a
    decomposed "é" that macOS would make one name with the composed one) and keeps "séance". It starts with a letter or
    digit (no hidden file, nothing read as an option), does not end in a space or dot (Windows drops them), is not
    a device name Windows reserves (``con``, ``nul``, ``com1``, ...) and is at most ``max_length`` characters.
    """
    if not isinstance(name, str):
        return f"not text (a JSON {type(name).__name__})"
    if not name:
        return "empty"
    bad = next((c for c in name if not _allowed(c)), None)
    if bad is not None:
        return _character_problem(bad)
    if unicodedata.normalize("NFKC", name) != name:
        return "not in Unicode's NFKC form (a decomposed accent or a look-alike such as a fullwidth letter)"
    if not name[0].isalnum():
        return f"starts with {name[0]!r}"
    if name[-1] in " .":
        return f"ends with {name[-1]!r}"
    if len(name) > max_length:
        return f"{len(name)} characters long (at most {max_length})"
    if name.split(".")[0].rstrip().lower() in RESERVED_NAMES:
        return "a device name Windows reserves"
    return None


def _shown(name: object) -> str:
    return f"'{visible_text(name, max_length=60)}'" if isinstance(name, str) else repr(name)[:60]


def path_name(name: object, *, file: str | Path, field: str, max_length: int = MAX_NAME) -> str:
    """``name``, read from ``file``'s ``field``, when it is safe as one file or folder name (:func:`name_problem`);
    otherwise :class:`UnsafeNameError` naming the file, the field and why. Every name a file chose that becomes a
    path (a split in ``splits.json``, a build's group) passes here before anything is written."""
    problem = name_problem(name, max_length)
    if problem is not None or not isinstance(name, str):
        raise UnsafeNameError(f"{file}: field {field}: {_shown(name)} cannot be a file or folder name: {problem}; "
                              f"{NAME_RULE} (at most {max_length})")
    return name


def distinct_path_names(names: Iterable[str], *, file: str | Path, field: str) -> None:
    """Refuse two names that differ only in case: macOS and Windows keep them in one folder, so one split's
    files would overwrite the other's."""
    seen: dict[str, str] = {}
    for name in names:
        first = seen.setdefault(name.casefold(), name)
        if first != name:
            raise UnsafeNameError(f"{file}: field {field}: {_shown(first)} and {_shown(name)} differ only in case, "
                                  "and would be one folder on macOS and Windows; rename one")


def inside_path(root: Path, relative: object, *, file: str | Path, field: str) -> Path:
    """``root / relative`` for a relative POSIX path read from ``file``'s ``field`` (a build manifest's ``clip``),
    refused with :class:`UnsafeNameError` when it could point outside ``root``: absolute, a ``..`` part, a
    backslash, a NUL or another control character, or empty. The file is then read only from inside ``root``."""
    text = relative if isinstance(relative, str) else ""
    pure = PurePosixPath(text)
    bad = next((c for c in text if c == "\\" or unicodedata.category(c) in _UNPRINTABLE), None)
    problem = ("empty or not text" if not text else "an absolute path" if pure.is_absolute() or text.startswith("/")
               else "holds '..'" if ".." in pure.parts else _character_problem(bad) if bad is not None else None)
    if problem is not None:
        raise UnsafeNameError(f"{file}: field {field}: {_shown(relative)} is not a path inside {root}: {problem}")
    return root / pure
