"""rescue uses other libraries through their public API (issue 47 item 1): no import of a third-party module or
name whose own name is private (``from matplotlib._x import y``, ``import aiohttp._helpers``, ``from pydantic
import _internal``), and none of the private names issue 47 took out. The one bounded exception is listed in
docs/architecture.md ("Third-party internals") with its own test."""

from __future__ import annotations

import ast
import re
import sys

from source_tree import SRC, parsed

# docs/architecture.md's table: each bounded private import, with the module that alone may make it.
BOUNDED = {("inspect_ai.model._generate_config", "rescue/inspect_tasks/bench.py")}

# Private names of other libraries that rescue used once (issue 47), found anywhere in src as an attribute, a name
# or a string: ``obj._name`` on an object a library made cannot be told from one of rescue's own in general, so
# these are named (and BERTScorer's, whose names are common, in the BERTScore module).
REMOVED = ("_prepare_font", "draw_text_image", "_get_font_height_metrics", "_set_gc_clip",
           "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__", "__pydantic_validator__")
REMOVED_IN = {"rescue/scoring/bertscore.py": ("_tokenizer", "_model", "_baseline_vals")}
OWN_AND_STDLIB = {"rescue", "__future__", *sys.stdlib_module_names}


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.endswith("__") for part in dotted.split("."))


def _third_party(module: str) -> bool:
    return module.split(".")[0] not in OWN_AND_STDLIB


def private_imports(tree: ast.Module) -> list[str]:
    """The third-party private modules or names a module imports, as written."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.split(".")[0] not in OWN_AND_STDLIB and _private(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in OWN_AND_STDLIB:
                continue
            if _private(node.module):
                found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def private_attributes(tree: ast.Module) -> list[str]:
    """``name._private`` where ``name`` is what a module bound by importing another library (a module, a class, a
    function: ``typer._click``, ``font_manager._get_font``, ``BERTScorer._x``)."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.asname or alias.name.split(".")[0] for alias in node.names if _third_party(alias.name)}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _third_party(node.module):
            imported |= {alias.asname or alias.name for alias in node.names}
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:  # each whole chain once
            chain, root = [node.attr], node.value
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported and _private(".".join(chain)):
                found.append(".".join([root.id, *reversed(chain)]))
    return found


def removed_names(tree: ast.Module, names: tuple[str, ...] = REMOVED) -> list[str]:
    """Uses of ``names``: as an attribute (``x._prepare_font``), a name, or a string (``getattr``, ``setattr``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(node.attr)
        elif isinstance(node, ast.Name) and node.id in names:
            found.append(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.append(node.value)
    return found


def test_no_module_imports_a_third_party_private_name():
    offending = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC.parent).as_posix()
        for name in private_imports(parsed(path)):
            if not any(name.startswith(module) and where == allowed for module, allowed in BOUNDED):
                offending.append(f"{where}: {name}")
    assert not offending, offending


def test_no_module_reads_a_private_attribute_of_what_it_imported():
    offending = [f"{path.relative_to(SRC.parent)}: {name}" for path in sorted(SRC.rglob("*.py"))
                 for name in private_attributes(parsed(path))]
    assert not offending, offending


def test_the_private_names_issue_47_removed_stay_out():
    offending = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC.parent).as_posix()
        names = REMOVED + REMOVED_IN.get(where, ())
        offending += [f"{where}: {name}" for name in removed_names(parsed(path), names)]
    assert not offending, offending


def test_the_scan_finds_each_form_it_forbids():
    # The scans on code written for them: each form of a private import, and each removed name in use.
    code = ast.parse("\n".join([
        "import aiohttp._helpers", "from matplotlib._mathtext import x", "from pydantic import _internal",
        "from typer import _click", "import numpy.linalg._umath as u",
        "from rescue._cache import ok", "from os import _exit", "from __future__ import annotations",
        "from matplotlib import pyplot", "import typing",
    ]))
    assert private_imports(code) == ["aiohttp._helpers", "matplotlib._mathtext", "pydantic._internal",
                                     "typer._click", "numpy.linalg._umath"]
    uses = ast.parse("r._renderer.draw_text_image(i)\nobject.__setattr__(v, '__pydantic_extra__', {})\n"
                     "font = self._prepare_font(p)\nx = obj.model\nm = s._model\n")
    assert sorted(removed_names(uses)) == ["__pydantic_extra__", "_prepare_font", "draw_text_image"]
    assert removed_names(uses, REMOVED_IN["rescue/scoring/bertscore.py"]) == ["_model"]
    reads = ast.parse("import typer\nfrom matplotlib import font_manager as fm\nfrom rescue import x\n"
                      "typer._click.Group\nfm._get_font(p)\nx._own\nself._mine\ntyper.main.__name__\n")
    assert sorted(private_attributes(reads)) == ["fm._get_font", "typer._click.Group"]


def test_the_bounded_exception_is_the_documented_one():
    docs = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module, allowed in BOUNDED:
        assert module in docs
        assert re.search(rf"^from {re.escape(module)} import", (SRC.parent / allowed).read_text(encoding="utf-8"),
                         re.MULTILINE) or module in (SRC.parent / allowed).read_text(encoding="utf-8")
