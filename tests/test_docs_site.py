"""The docs stay true to the tree (issue #25, item 7): the site's nav (mkdocs.yml) lists every page of docs/ and
only pages that exist; every ``rescue.x.y`` the docs name is a module or a name defined in one; every test,
benchmark, script or source file they name exists. ``mkdocs build --strict`` (scripts/test.sh) checks the links
and anchors; these checks need no mkdocs and read files only, but for the one that builds the site to check that it
asks no other host for anything (issue 35: offline, a font server's fonts were a console error)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SRC = ROOT / "src"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
# What a page loads by itself (a stylesheet, a preconnect, a script, an image, a CSS import), as opposed to a link
# the reader may follow.
LOADED = re.compile(r"<link\b[^>]*\bhref=\"(https?:)?//[^\"]+\"|<(script|img|iframe)\b[^>]*\bsrc=\"(https?:)?//[^\"]+\"|"
                    r"@import\s+url\(\s*[\"']?(https?:)?//|url\(\s*[\"']?https?://")


def test_the_nav_lists_every_page_and_no_missing_one():
    nav = set(re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not pages - nav, f"pages missing from mkdocs.yml's nav: {sorted(pages - nav)}"
    assert not nav - pages, f"mkdocs.yml's nav names pages that do not exist: {sorted(nav - pages)}"


@cache
def _defined(module: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = SRC.joinpath(*parts[:i])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = parts[i:]
            return not rest or rest[0] in _defined(module)
    return False


def test_every_rescue_name_in_the_docs_exists():
    stale = sorted({f"{page.relative_to(ROOT)}: {name}" for page in PAGES
                    for name in re.findall(r"(?:`|from |import )(rescue(?:\.\w+)+)", page.read_text(encoding="utf-8"))
                    if not _resolves(name)})
    assert not stale, "the docs name what the code no longer has:\n" + "\n".join(stale)


def test_every_file_the_docs_name_exists():
    # Lower-case names only: ``src/rescue/tasks/NAME.py`` is a placeholder.
    files = r"\b((?:tests|benchmarks|scripts)/[a-z0-9_]+\.(?:py|sh)|src/rescue/[a-z0-9_/]+\.py)"
    missing = sorted({f"{page.relative_to(ROOT)}: {path}" for page in PAGES
                      for path in re.findall(files, page.read_text(encoding="utf-8")) if not (ROOT / path).exists()})
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


@pytest.mark.slow
def test_the_site_loads_nothing_from_another_host(tmp_path):
    """The theme's fonts were fetched from a font server (mkdocs.yml ``font: false`` keeps the system's)."""
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    pages = [*site.rglob("*.html"), *site.rglob("*.css"), *site.rglob("*.js")]
    assert any(p.suffix == ".html" for p in pages)
    loads = {str(p.relative_to(site)): found.group(0)[:120] for p in pages
             if (found := LOADED.search(p.read_text(encoding="utf-8", errors="replace")))}
    assert loads == {}, loads
