"""The layers of docs/architecture.md, checked on the source: which package may import which, no import
cycle between modules (lazy imports inside functions included), ``rescue.metrics`` importing nothing from
rescue, and no task named outside ``rescue.tasks`` except where a user-facing option says it.

Everything is read with ``ast`` from ``src/rescue``; only the task names come from the registry
(``rescue.tasks.TASKS``, so a new task is checked with no edit here). A new package must be added to LAYERS
here and to docs/architecture.md.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections import defaultdict
from pathlib import Path

from source_tree import SRC, parsed

from rescue.tasks import TASKS

EVERYTHING = "*"

# package -> the rescue packages it may import (lower layers only). The order, lowest first, is the one
# docs/architecture.md draws.
LAYERS: dict[str, set[str] | str] = {
    "_version": set(),  # a leaf every layer may read
    "atomic": set(),  # the one atomic writer: a leaf every layer writes through
    "errors": set(),  # every exception and the exit codes: the ground every layer raises and catches on
    "data": {"atomic"},
    "archives": set(),  # archives read with limits (inspect logs): a leaf any layer above data may use
    "files": {"atomic"},  # safe file names, hashes, the output folder check, one writer per folder
    "display": {"data"},  # text from outside made safe for a terminal or a Markdown table
    "proc": set(),  # child processes that end with rescue, for every layer above data
    "threads": set(),  # how many threads the libraries' pools start: one number, for every layer above data
    "metrics": set(),  # plain functions: nothing from rescue at all
    "tasks": {"data", "metrics"},
    "llm": {"data"},  # the task-free model layer
    "runs": {"data", "tasks"},  # the run directory: results.json, predictions.jsonl, its lock and readers
    "media": {"data"},
    "scoring": {"data", "metrics", "tasks", "llm"},  # data: the closed choices (judge scale)
    "video": {"data", "tasks", "llm", "media"},
    "baselines": {"data", "tasks", "llm"},  # the offline baselines and their fits: TaskModels the engine asks
    "engine": {"data", "tasks", "llm", "scoring", "video", "runs", "baselines"},
    "builder": {"data", "llm", "media"},  # rescue build's pipeline (not "build": tools skip that folder)
    "review": {"data", "metrics", "media"},  # the verification tool: no task, model or video (those are human's)
    # the human reference (benchmark projects): the tasks' prompts, the frames a model gets, the review tool's app
    "human": {"data", "metrics", "tasks", "llm", "video", "review"},
    "report": {"data", "metrics", "tasks", "scoring", "runs"},  # runs, never engine: it reads runs, runs nothing
    "suites": {"llm"},
    # inspect_ai tasks: rescue's own instances, prompts, parsing, judge and metrics; the runner's sample choice
    "inspect_tasks": {"data", "tasks", "llm", "scoring", "engine", "runs"},
    "testing": {"data", "tasks", "llm"},
    "exports": {"data", "tasks"},  # fine-tuning chats and datasets folders, rendered by the tasks themselves
    # submission bundles and their verification: a run re-derived with the engine's own rescore, the report's intervals
    "submissions": {"data", "tasks", "llm", "scoring", "runs", "engine", "report"},
    # the public leaderboard: a static site from verified bundles, ranked by the report's own paired test
    "leaderboard": {"data", "tasks", "runs", "report", "submissions"},
    "cli": EVERYTHING,
    "__init__": EVERYTHING,  # the notebook API
    "__main__": EVERYTHING,
    "_launch": EVERYTHING,  # the command's first code: takes SIGTERM, then imports the CLI
}
LEAVES = {"_version", "archives", "atomic", "display", "files", "proc", "threads"}  # any layer above data may use them
GROUND = {"errors"}  # any layer but metrics (which imports nothing from rescue) may use it
TASK_NAMES = set(TASKS)
# Where a task may still be named outside rescue.tasks: a user-facing option that is about one task.
NAMED_TASKS_ALLOWED = {
    ("engine/config.py", "rpp"),  # --rpp-gold, the shorthand for --task-option rpp.rpp_gold=...
    ("cli/_tasks_cmds.py", "rpp"),  # the same shorthand on `rescue tasks`
    ("report/reference/__init__.py", "rpp"),
    ("leaderboard/table.py", "rpp"),  # the site's relation-pattern view is RPP's accuracy by its gold pattern  # the paper's own RPP evaluation set differs from its Table 6
    # judge-agreement's --task choices, written out so `rescue --help` need not import the registry;
    # tests/cli/test_cli_help.py holds them equal to rescue.tasks.judged_tasks().
    ("cli/_app.py", "er"),
    ("cli/_app.py", "vp"),
}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


@functools.cache  # eight tests ask, each of every module
def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every rescue import in the file, at any depth (lazy imports included); ``from
    pkg import submodule`` counts as importing the submodule."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "rescue":
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES]
            targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            found += [(node.lineno, t) for t in targets]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rescue"]
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(module: str) -> str:
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def test_every_package_is_in_the_layer_table():
    packages = {_package(m) for m in MODULES if m != "rescue"} | {"__init__"}
    unknown = sorted(packages - set(LAYERS))
    assert not unknown, f"new package(s) {unknown}: add them to LAYERS and to docs/architecture.md"


def test_packages_import_only_lower_layers():
    wrong = []
    for module, path in MODULES.items():
        own = _package(module)
        allowed = LAYERS.get(own, set())
        if allowed == EVERYTHING:
            continue
        for line, target in _imports(path):
            other = _package(_resolve(target))
            if other != own and other not in allowed and not (other in LEAVES and own not in ("data", "metrics")) \
                    and not (other in GROUND and own != "metrics"):
                wrong.append(f"{path.relative_to(SRC)}:{line}: {own} imports {target} ({other} is not below {own})")
    assert not wrong, "imports against docs/architecture.md:\n" + "\n".join(wrong)


def _docs_layer_table() -> dict[str, set[str] | str]:
    """docs/architecture.md's first fenced block: ``NAMES  what they are  DEPENDENCIES`` per line, columns apart by
    two spaces or more; "everything below" is EVERYTHING, "nothing ..." is none, a parenthesis is a remark."""
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    table: dict[str, set[str] | str] = {}
    for line in block.strip().splitlines():
        columns = re.split(r"\s{2,}", line.strip())
        names, deps = columns[0], re.sub(r"\([^)]*\)", "", columns[-1]).strip()
        parsed: set[str] | str = (EVERYTHING if deps.startswith("everything") else set() if deps.startswith("nothing")
                                  else {d.strip() for d in deps.split(",")})
        for name in re.sub(r"\([^)]*\)", "", names).split(","):
            table["__init__" if name.strip() == "rescue" else name.strip()] = parsed
    return table


def test_the_docs_draw_this_table():
    """One fact in one place: docs/architecture.md's layer table says what LAYERS says."""
    assert _docs_layer_table() == LAYERS


def test_every_allowed_dependency_is_used():
    """The table lists no dependency the code does not have (a stale allowance reads as a real dependency)."""
    used: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for _, target in _imports(path):
            used[_package(module)].add(_package(_resolve(target)))
    stale = [f"{package} -> {dep}" for package, deps in LAYERS.items() if deps != EVERYTHING
             for dep in sorted(deps) if dep not in used[package]]
    assert not stale, f"LAYERS (and docs/architecture.md) allow imports nothing makes: {stale}"


def test_the_layer_table_itself_has_no_cycle():
    graph = {p: (set() if deps == EVERYTHING else set(deps)) for p, deps in LAYERS.items()}
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"layer cycle: {' -> '.join((*path, node))}"
        if node in done:
            return
        for nxt in graph.get(node, ()):
            visit(nxt, (*path, node))
        done.add(node)

    for package in graph:
        visit(package, ())


def test_no_import_cycle_between_modules():
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for _, target in _imports(path):
            target = _resolve(target)
            if target in MODULES and target != module:
                edges[module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            strongconnect(module)
    assert not cycles, f"import cycles: {cycles}"


def test_metrics_import_nothing_from_rescue():
    found = [(path.name, line, target) for module, path in MODULES.items() if _package(module) == "metrics"
             for line, target in _imports(path) if _package(_resolve(target)) != "metrics"]
    assert not found, found


def _string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_task_is_named_outside_the_tasks_package():
    """A task declares itself once; the layers above read the registry (issue #9, item 1)."""
    named = []
    for module, path in MODULES.items():
        if _package(module) == "tasks":
            continue
        relative = path.relative_to(SRC).as_posix()
        for line, value in _string_constants(parsed(path)):
            if value.lower() in TASK_NAMES and (relative, value.lower()) not in NAMED_TASKS_ALLOWED:
                named.append(f"{relative}:{line}: {value!r}")
    assert not named, "task names outside rescue.tasks (read the registry instead):\n" + "\n".join(named)


def test_no_task_module_imports_a_private_name_of_another():
    """What tasks share lives in the shared modules of rescue.tasks under a public name (issue #25, item 1)."""
    found = []
    for module, path in MODULES.items():
        if _package(module) != "tasks":
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rescue."):
                found += [f"{path.relative_to(SRC)}:{node.lineno}: {node.module}.{a.name}"
                          for a in node.names if a.name.startswith("_")]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


# The ground floor's tree, and the data's own errors on its base (issue #36, item 1).
ERRORS_MODULES = ("errors.py", "data/errors.py")


def test_every_exception_is_defined_in_the_errors_module():
    """One error hierarchy in one module (issue #25, item 5): a class deriving from an exception anywhere else
    is private to its module (``_Name``); a module that keeps a public name imports it from rescue.errors."""
    known = {"Exception", "BaseException", "ValueError", "SystemExit", "KeyError", "RuntimeError", "OSError"}
    for module in ERRORS_MODULES:
        known |= {node.name for node in parsed(SRC / module).body if isinstance(node, ast.ClassDef)}
    elsewhere = []
    for path in MODULES.values():
        relative = path.relative_to(SRC).as_posix()
        if relative in ERRORS_MODULES:
            continue
        for node in ast.walk(parsed(path)):
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in getattr(node, "bases", [])}
            if isinstance(node, ast.ClassDef) and bases & known and not node.name.startswith("_"):
                elsewhere.append(f"{relative}:{node.lineno}: {node.name}")
    assert not elsewhere, "exceptions defined outside rescue/errors.py:\n" + "\n".join(elsewhere)


# Project-wide tests stay at the top of tests/; every other test file sits in the folder of the package it tests.
PROJECT_WIDE_TESTS = {"test_layers.py", "test_docs_site.py", "test_docstrings.py", "test_scripts_heartbeat.py", "test_archives.py",
                      "test_scripts_count_any.py", "test_scripts_lock.py", "test_atomic.py", "test_out_targets.py", "test_errors.py", "test_docs_tables.py", "test_public_surface.py",
                      "test_benchmark_peak.py", "test_threads.py", "test_no_private_internals.py"}


def test_tests_mirror_the_packages():
    tests = Path(__file__).resolve().parent
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    top = {p.name for p in tests.glob("test_*.py")}
    assert top <= PROJECT_WIDE_TESTS, f"move these into the folder of the package they test: {sorted(top - PROJECT_WIDE_TESTS)}"
    strays = sorted(p.parent.name for p in tests.glob("*/test_*.py") if p.parent.name not in packages)
    assert strays == [], f"test folders that name no rescue package: {strays}"


def test_every_test_folder_is_collected(pytestconfig):
    # pytest's default norecursedirs names "build": tests/build (now tests/builder) was silently left out of every
    # run until this test.
    tests = Path(__file__).resolve().parent
    patterns = pytestconfig.getini("norecursedirs")
    skipped = sorted(folder.name for folder in tests.iterdir()
                     if folder.is_dir() and any(folder.glob("test_*.py"))
                     and any(fnmatch.fnmatch(folder.name, pattern) for pattern in patterns))
    assert skipped == [], f"test folders pytest does not collect (norecursedirs in pyproject.toml): {skipped}"


# Folder names that common tools take for output or environments and skip: pytest's default norecursedirs, the
# usual Python ignore rules (GitHub's Python .gitignore), mkdocs' site/, coverage's htmlcov/, node's
# node_modules/, and hidden folders. A package or test folder so named is silently left out somewhere (the
# pipeline of `rescue build` is the package rescue.builder for this reason).
TOOL_SKIPPED_FOLDERS = ("build", "dist", "site", "sdist", "wheels", "eggs", "*.egg", "*.egg-info", "develop-eggs",
                        "downloads", "parts", "lib", "lib64", "var", "env", "venv", "ENV", "node_modules", "htmlcov",
                        "target", "_darcs", "CVS", "{arch}", "__pypackages__", ".*")


def _folders_named_like_output(root: Path) -> list[str]:
    """Every folder under ``root`` that holds Python files and bears a name in TOOL_SKIPPED_FOLDERS (any case)."""
    return sorted(str(folder.relative_to(root)) for folder in {path.parent for path in root.rglob("*.py")}
                  if folder != root and any(fnmatch.fnmatch(part.lower(), pattern.lower())
                                            for part in folder.relative_to(root).parts
                                            for pattern in TOOL_SKIPPED_FOLDERS))


def test_no_package_or_test_folder_is_named_like_tool_output():
    tests = Path(__file__).resolve().parent
    named = [f"src/rescue/{name}" for name in _folders_named_like_output(SRC)]
    named += [f"tests/{name}" for name in _folders_named_like_output(tests)]
    assert named == [], f"folders that tools skip as output or environments; rename them: {named}"


def test_the_folder_name_check_finds_every_kind(tmp_path):
    for folder in ("build", "Dist/inner", "pkg/site", "x.egg-info", ".hidden", "node_modules", "venv", "ok/builder"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text("", encoding="utf-8")
    assert _folders_named_like_output(tmp_path) == [".hidden", "Dist/inner", "build", "node_modules", "pkg/site",
                                                    "venv", "x.egg-info"]
