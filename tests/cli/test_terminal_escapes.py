"""The terminal is not an attack surface (issue #42 item 7): sample ids, labels, split names, suite entries, model
names and model answers holding escape sequences (CSI, OSC), C0 and C1 controls, bidi overrides and isolates and
zero-width characters reach no terminal raw, from any command that prints them. `rescue stats` and `rescue splits`
printed such ids raw; rich markup in them (`[bold]`, a stray `[/]`) is shown as written, never styled or a crash.

Each case runs the real `rescue` command in a process of its own, with its output piped (rich then writes no
control sequence of its own, so any control character in the output came from the data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from rescue.data.reading import demo_path
from rescue.testing.openai_server import Reply, serve

ROOT = Path(__file__).resolve().parents[2]

# The issue's two (ESC[31m, U+202E), then what a terminal also acts on: an OSC title ended by BEL, C1's CSI and
# NEL, backspace, carriage return, NUL, DEL, a line separator, every bidi embedding/override/isolate, zero-width
# characters and a byte-order mark; and rich markup, a closing tag that matches nothing included.
HOSTILE = ("\x1b[31mred\x1b]0;pwned\x07\u202egnp.exe[bold]b[/]\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069"
           "\x9b2J\x85\x08\r\x00\x7f\u2028\u200b\u200c\u200d\u2060\ufeff[/]end")
HOSTILE_ARG = HOSTILE.replace("\x00", "")  # what a command-line argument can hold
HOSTILE_MODEL = "m\x1b[31mx[bold]y\u202ez\u200bq"
HOSTILE_ANSWER = "no\x1b]0;pwned\x07 \u202eanswer\x1b[2J[red]x[/]"


def unsafe(text: str) -> list[str]:
    """The characters in ``text`` a terminal would act on or hide: C0 and C1 controls but the line break, format
    characters (bidi, zero-width, BOM), surrogates and the Unicode line and paragraph separators."""
    return sorted({f"U+{ord(c):04X}" for c in text
                   if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


def rescue(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path]), "COLUMNS": "120",
           "OPENAI_API_KEY": "test"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "rescue", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300, input=stdin, encoding="utf-8", errors="surrogateescape")


def assert_safe(done: subprocess.CompletedProcess[str], *codes: int) -> None:
    assert done.returncode in (codes or (0,)), done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    for name, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        assert not unsafe(text), (name, unsafe(text), [line for line in text.splitlines() if unsafe(line)][:3])


def _hostile_release(path: Path, *, labels: bool = False, piece: str = HOSTILE) -> Path:
    """The demo release with HOSTILE in every sample id (its group folder and its name) or, with ``labels``, in
    every utterance type (an unknown label: an error `rescue validate` names)."""
    lines = []
    for line in demo_path().read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        if labels:
            for row in sample["rows"]:
                row["utterance_type"] = (row.get("utterance_type") or "x") + piece
        else:
            group, _, stem = sample["sample_id"].partition("/")
            sample["sample_id"] = f"{group}{piece}/{stem}{piece}"
        lines.append(json.dumps(sample))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return _hostile_release(tmp_path_factory.mktemp("hostile") / "hostile.jsonl")


def test_the_issues_case_stats_prints_no_raw_escape(data, tmp_path):
    done = rescue("stats", "--data", str(data), cwd=tmp_path)
    assert_safe(done)
    assert "\\x1b[31mred" in done.stdout and "\\u202e" in done.stdout  # shown, escaped
    assert "[bold]b[/]" in done.stdout  # markup as written


def test_the_issues_case_splits_prints_no_raw_escape(data, tmp_path):
    done = rescue("splits", "--data", str(data), "--out", str(tmp_path / "splits.json"), cwd=tmp_path)
    assert_safe(done)
    plan = json.loads((tmp_path / "splits.json").read_text(encoding="utf-8"))
    assert any(HOSTILE in i for ids in plan["splits"].values() for i in ids)  # the file keeps the ids as they are


@pytest.mark.parametrize("args", [
    ["validate"], ["stats", "--format", "markdown"], ["stats", "--format", "latex"], ["tasks"],
    ["tasks", "--format", "json"], ["splits", "--quiet"], ["splits", "--folds", "2"],
], ids=lambda a: "-".join(a))
def test_data_commands_print_no_raw_control(data, tmp_path, args):
    if args[0] == "splits":
        args = [*args, "--out", str(tmp_path / "splits.json")]
    assert_safe(rescue(*args, "--data", str(data), cwd=tmp_path))


def test_json_output_is_safe_and_holds_the_same_ids(data, tmp_path):
    done = rescue("stats", "--data", str(data), "--format", "json", cwd=tmp_path)
    assert_safe(done)
    assert any(HOSTILE in text for text in _strings(json.loads(done.stdout)))  # escaped, not lost


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_validate_names_hostile_labels_escaped(tmp_path):
    labels = _hostile_release(tmp_path / "labels.jsonl", labels=True)
    done = rescue("validate", "--data", str(labels), cwd=tmp_path)
    assert_safe(done, 2)
    assert "utterance_type" in done.stderr and "\\x1b[31mred" in done.stderr


def test_split_names_from_a_splits_file_are_escaped(data, tmp_path):
    splits = tmp_path / "splits.json"
    assert_safe(rescue("splits", "--data", str(data), "--out", str(splits), "--quiet", cwd=tmp_path))
    plan = json.loads(splits.read_text(encoding="utf-8"))
    plan["splits"] = {f"test{HOSTILE_ARG}" if name == "test" else name: ids for name, ids in plan["splits"].items()}
    plan["groups"] = {f"test{HOSTILE_ARG}" if name == "test" else name: g for name, g in plan["groups"].items()}
    splits.write_text(json.dumps(plan), encoding="utf-8")
    for command in ("stats", "tasks"):
        done = rescue(command, "--data", str(data), "--splits", str(splits), "--split", f"test{HOSTILE_ARG}",
                      cwd=tmp_path)
        assert_safe(done, 0, 2)


def test_a_hostile_suite_file_is_shown_escaped(tmp_path):
    suite = tmp_path / "suite.toml"
    text = json.dumps(HOSTILE)  # a TOML basic string is a JSON string
    suite.write_text(f"[suite]\nname = {text}\ndescription = {text}\nsource = {text}\n[run]\ntasks = [\"itp\"]\n"
                     f"[[models]]\nspec = \"baseline/majority\"\npaper = {text}\nsource = {text}\n", encoding="utf-8")
    done = rescue("run", "--suite", str(suite), "--dry-run", cwd=tmp_path)
    assert_safe(done)
    assert "\\x1b[31mred" in done.stdout


def test_review_accounts_refuse_hostile_names_and_say_so_escaped(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    _hostile_release(project / "draft.jsonl", piece=HOSTILE_ARG)  # the review tool refuses a NUL in an id
    refused = rescue("review", "user", "add", str(project), f"ann{HOSTILE_ARG}", "--password-stdin", cwd=tmp_path,
                     stdin="long-enough-password\n")
    assert_safe(refused, 2)
    assert_safe(rescue("review", "user", "add", str(project), "ann", "--password-stdin", cwd=tmp_path,
                       stdin="long-enough-password\n"))
    assert_safe(rescue("review", "user", "list", str(project), cwd=tmp_path))


@pytest.mark.slow
def test_runs_reports_and_dry_runs_with_hostile_models_ids_and_answers(data, tmp_path):
    runs = tmp_path / "runs"
    baseline = rescue("run", "--model", "baseline/majority", "--data", str(data), "--tasks", "itp,rpp",
                      "--limit-samples", "2", "--out", str(runs / "baseline"), cwd=tmp_path)
    assert_safe(baseline)
    assert "sample(s) taken" in baseline.stderr and "\\x1b[31mred" in baseline.stderr
    with serve(Reply.text(HOSTILE_ANSWER)) as server:
        dry = rescue("run", "--model", HOSTILE_MODEL, "--base-url", server.base_url, "--data", str(data),
                     "--tasks", "itp", "--dry-run", cwd=tmp_path)
        assert_safe(dry)
        assert "\\x1b[31mx[bold]y\\u202ez\\u200bq" in dry.stdout
        hostile = rescue("run", "--model", HOSTILE_MODEL, "--base-url", server.base_url, "--data", str(data),
                         "--tasks", "itp", "--limit-samples", "1", "--no-bertscore", "--max-retries", "0",
                         "--out", str(runs / "hostile"), cwd=tmp_path)
        assert_safe(hostile, 0, 3)
        assert "Why answers failed" in hostile.stderr
    report = rescue("report", str(runs / "baseline"), str(runs / "hostile"), "--data", str(data), "--out",
                    str(tmp_path / "report"), "--bootstrap", "0", "--no-html", "--no-figures", "--allow-mixed",
                    cwd=tmp_path)
    assert_safe(report, 0, 2)
    rescored = rescue("rescore", str(runs / "hostile"), cwd=tmp_path)
    assert_safe(rescored, 0, 3)


def test_judge_agreement_shows_hostile_judge_and_rater_names_escaped(tmp_path):
    """A run whose predictions.jsonl names a hostile judge (an edited file is outside text too) and ratings from
    hostile raters, with an instance id that matches nothing: the table, the checks and the JSON."""
    run = tmp_path / "run"
    assert_safe(rescue("run", "--model", "baseline/majority", "--tasks", "er", "--no-bertscore", "--out", str(run),
                       "-q", cwd=tmp_path))
    judge, lines, ids = f"judge{HOSTILE}", [], []
    for number, line in enumerate((run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        score = 1 + number % 5
        record["judge"]["judges"] = {judge: {"status": "ok", "scores": {"judge_emotion": score}, "attempts": 1}}
        record["scores"]["judge_emotion"] = score
        ids.append(record["instance_id"])
        lines.append(json.dumps(record))
    (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    raters = [f"r1{HOSTILE_ARG}", f"r2{HOSTILE_ARG}"]
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", encoding="utf-8", newline="") as handle:
        import csv

        writer = csv.writer(handle)
        writer.writerow(["instance_id", "rater", "score"])
        writer.writerows([i, rater, 1 + (k + r) % 5] for k, i in enumerate(ids) for r, rater in enumerate(raters))
        writer.writerow([f"nope{HOSTILE_ARG}", raters[0], 3])
    table = rescue("judge-agreement", str(run), "--ratings", str(ratings), cwd=tmp_path)
    assert_safe(table)
    assert "judge\\x1b[31mred" in table.stdout and "match no instance" in table.stdout
    as_json = rescue("judge-agreement", str(run), "--ratings", str(ratings), "--format", "json", cwd=tmp_path)
    assert_safe(as_json)
    assert judge in json.loads(as_json.stdout)["tasks"]["er"]["judges"]
