"""Mutation testing of the modules where a wrong number would hurt a researcher, with mutmut.

    bash scripts/mutation.sh                 # every module below
    bash scripts/mutation.sh metrics report  # some of them
    bash scripts/mutation.sh --list          # the modules, their files and tests

Each module is run in its own scratch copy of the project (``.mutation/<module>/``, git-ignored) whose
``pyproject.toml`` gets a ``[tool.mutmut]`` table naming only that module's files and its fast tests: mutmut
reads its configuration from the working directory, and a narrow test selection keeps a run within minutes
on two cores. The score is killed / (all mutants − skipped); "explained" adds the equivalent mutants listed in
``scripts/mutation-equivalent.txt`` (no test can tell them from the original), matched by function and mutated
line. The score per module and every survivor go to stdout, and to ``.mutation/scores.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRATCH = REPO / ".mutation"
EQUIVALENT = REPO / "scripts" / "mutation-equivalent.txt"
FAST = "not slow and not browser and not local_model"
# One-line stubs (`def parse(..., policy: ParsePolicy = "strict") -> ...: ...`) of typing Protocols: a mutant of
# a default there makes mutmut add attributes to the Protocol, and runtime_checkable isinstance checks then fail.
STUB = r"^\s+def \w+\(.*\).*: \.\.\.$"


@dataclass(frozen=True)
class Module:
    files: tuple[str, ...]  # mutmut only_mutate globs, relative to the repository
    tests: tuple[str, ...]  # the fast tests that exercise them
    pytest_args: tuple[str, ...] = ()  # e.g. a --deselect of a test too slow to run once per mutant


MODULES: dict[str, Module] = {
    "metrics": Module(
        ("src/rescue/metrics/*",),
        ("tests/metrics/test_metrics_classification.py", "tests/metrics/test_metrics_ranking.py", "tests/metrics/test_metrics_contract.py",
         "tests/scoring/test_judge_agreement.py", "tests/tasks/test_er_vp.py"),
    ),
    "tasks": Module(
        ("src/rescue/tasks/*",),
        ("tests/tasks/test_tasks_itp.py", "tests/tasks/test_tasks_ranking.py", "tests/tasks/test_tasks_parsing.py",
         "tests/tasks/test_tasks_registry.py", "tests/tasks/test_er_vp.py", "tests/tasks/test_prompt_pins.py",
         "tests/llm/test_batch_leaks.py", "tests/tasks/test_parse_policy.py", "tests/scoring/test_judge.py", "tests/tasks/test_tasks_contract.py"),
        # Over 10 s each; the demo prompts' pins cover the same renderers, the other batching tests the splits.
        ("--deselect", "tests/tasks/test_prompt_pins.py::test_real_sample_prompts_are_byte_identical",
         "--deselect", "tests/llm/test_batch_leaks.py::test_results_record_the_batching_and_its_splits"),
    ),
    "llm": Module(
        ("src/rescue/llm/_cache.py", "src/rescue/llm/_reliable.py"),
        ("tests/llm/test_llm_cache_cost.py", "tests/llm/test_llm_reliable.py", "tests/llm/test_llm_layer.py",
         "tests/llm/test_llm_cache_key.py", "tests/llm/test_llm_faults.py"),
        # 23 s of whole runs, for the key masking of secrets.py (outside this module); and a wall-clock bound that
        # mutmut's tracing of the first pass overruns.
        ("--deselect", "tests/llm/test_llm_faults.py::test_nothing_a_run_writes_holds_the_key",
         "--deselect", "tests/llm/test_llm_reliable.py::test_concurrency_is_used_and_capped"),
    ),
    "report": Module(
        ("src/rescue/report/bootstrap.py", "src/rescue/report/significance.py"),
        ("tests/report/test_report_stats.py", "tests/report/test_report_bootstrap_contract.py", "tests/report/test_report_seed.py",
         "tests/report/test_report_fast_path.py"),
    ),
}

COUNTED = ("killed", "timeout", "caught by type check", "survived", "no tests", "suspicious", "segfault")
KILLED = ("killed", "timeout", "caught by type check")
_RESULT = re.compile(r"^\s+(\S+): (.+)$")


def equivalent_mutants() -> dict[tuple[str, str], str]:
    """``(function, mutated line) -> why no test can tell it from the original`` from mutation-equivalent.txt.

    A mutant is identified by its function (the mutant name without ``__mutmut_N``) and the line as mutated,
    not by its number: numbers shift whenever the function changes, and a changed line must be looked at again.
    """
    found: dict[tuple[str, str], str] = {}
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            function, mutated, reason = (part.strip() for part in line.split(" :: ", 2))
            found[(function, mutated)] = reason
    return found


_SHOW = """
import json, sys
from mutmut.__main__ import find_mutant, get_diff_for_mutant
for name in json.load(sys.stdin):
    print(json.dumps([name, get_diff_for_mutant(name, path=find_mutant(name).path)]))
"""


def mutated_lines(work: Path, env: dict[str, str], mutants: list[str]) -> dict[str, str]:
    """The changed line(s) of each mutant, as ``mutmut show`` prints them, stripped and joined with ' / '
    (one process for all: mutmut's own functions, not one ``mutmut show`` per mutant)."""
    if not mutants:
        return {}
    done = subprocess.run([sys.executable, "-c", _SHOW], cwd=work, env=env, input=json.dumps(mutants),
                          capture_output=True, text=True, check=True)
    lines = {}
    for row in done.stdout.splitlines():
        name, diff = json.loads(row)
        lines[name] = " / ".join(line[1:].strip() for line in diff.splitlines()
                                 if line.startswith("+") and not line.startswith("+++"))
    return lines


def _toml_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def prepare(name: str, module: Module) -> Path:
    """A fresh scratch copy of src/, tests/ and pyproject.toml, configured for this module only."""
    work = SCRATCH / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(REPO / "src", work / "src", ignore=ignore)
    shutil.copytree(REPO / "tests", work / "tests", ignore=ignore)
    # The real samples live next to the repository (../shared); the tests find them the same way from here.
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (work / "shared").symlink_to(shared)
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pyproject = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", pyproject)
    pyproject += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {_toml_list(module.files)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(module.tests)}\n"
        f"pytest_add_cli_args = {_toml_list(['-m', FAST, '-p', 'no:cacheprovider', '-q', '-x', *module.pytest_args])}\n"
        f"do_not_mutate_patterns = {_toml_list([STUB])}\n"
    )
    (work / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return work


def run_module(name: str, module: Module, children: int, *, rerun: bool = True) -> dict[str, object]:
    """Mutation-test one module in a fresh scratch copy; ``rerun=False`` only summarises the last run's results."""
    work = prepare(name, module) if rerun else SCRATCH / name
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only mutants/src may provide rescue
    mutmut = [sys.executable, "-m", "mutmut"]
    started = time.monotonic()
    log = work / "mutmut.log"
    returncode = 0
    if rerun:
        with log.open("w", encoding="utf-8") as handle:
            returncode = subprocess.run([*mutmut, "run", "--max-children", str(children)], cwd=work, env=env,
                                        stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
    seconds = time.monotonic() - started
    listing = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                             text=True, check=False)
    statuses: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        match = _RESULT.match(line)
        if match:
            statuses[match.group(1)] = match.group(2).strip()
    if returncode != 0 or not statuses:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise SystemExit(f"mutmut failed for {name} (exit {returncode}); see {log}:\n" + "\n".join(tail))
    equivalent = equivalent_mutants()
    counts = {status: 0 for status in (*COUNTED, "skipped", "equivalent")}
    survivors: list[str] = []
    explained: list[str] = []
    shown = mutated_lines(work, env, [m for m, s in statuses.items() if s not in KILLED and s != "skipped"])
    for mutant, status in sorted(statuses.items()):
        if status not in KILLED and status != "skipped":
            function = mutant.rsplit("__mutmut_", 1)[0]
            line = shown[mutant]
            if (function, line) in equivalent:
                status = "equivalent"
                explained.append(f"{mutant}: {line}  ({equivalent[(function, line)]})")
            else:
                survivors.append(f"{mutant} [{status}]: {line}")
        counts[status] = counts.get(status, 0) + 1
    total = sum(counts[s] for s in (*COUNTED, "equivalent"))
    killed = sum(counts[s] for s in KILLED)
    return {
        "module": name, "files": list(module.files), "tests": list(module.tests), "mutants": total,
        "killed": killed, "equivalent": counts["equivalent"], "survived": total - killed - counts["equivalent"],
        "score": killed / total if total else None,
        "not_checked": counts.get("not checked", 0),
        "score_explained": (killed + counts["equivalent"]) / total if total else None,
        "counts": counts, "survivors": survivors, "equivalents": explained, "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mutation testing with mutmut; prints the score per module.")
    parser.add_argument("modules", nargs="*", help=f"some of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--children", type=int, default=2, help="parallel mutant runs (default 2)")
    parser.add_argument("--list", action="store_true", help="list the modules, their files and tests")
    parser.add_argument("--verbose", action="store_true", help="also list the mutants explained as equivalent")
    parser.add_argument("--files", nargs="+", metavar="GLOB",
                        help="mutate only these files of the module (e.g. src/rescue/tasks/vp.py)")
    parser.add_argument("--summary", action="store_true",
                        help="only summarise the last run of each module (after editing mutation-equivalent.txt)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    if args.list:
        for name, module in MODULES.items():
            print(f"{name}: {' '.join(module.files)}\n    tests: {' '.join(module.tests)}")
        return 0
    SCRATCH.mkdir(exist_ok=True)
    scores_path = SCRATCH / "scores.json"
    results = []
    for name in args.modules or list(MODULES):
        print(f"mutation testing {name} ({' '.join(args.files or MODULES[name].files)}) ...", flush=True)
        module = MODULES[name] if not args.files else Module(tuple(args.files), MODULES[name].tests,
                                                               MODULES[name].pytest_args)
        result = run_module(name, module, args.children, rerun=not args.summary)
        # Read just before writing: another module's run may have finished meanwhile.
        scores = json.loads(scores_path.read_text(encoding="utf-8")) if scores_path.exists() else {}
        scores[name] = result
        scores_path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
        results.append(result)
        for line in result["survivors"]:
            print(f"    survived    {line}")
        if args.verbose:
            for line in result["equivalents"]:
                print(f"    equivalent  {line}")
    print(f"\n{'module':<10} {'mutants':>8} {'killed':>7} {'equiv.':>7} {'survived':>9} {'score':>7} {'explained':>10} {'time':>7}")
    for r in results:
        print(f"{r['module']:<10} {r['mutants']:>8} {r['killed']:>7} {r['equivalent']:>7} {r['survived']:>9} "
              f"{r['score']:>7.1%} {r['score_explained']:>10.1%} {r['seconds']:>6.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
