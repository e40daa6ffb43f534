"""``rescue verify`` of a bundle that used BERTScore: BERTScore's last bits are the machine's, so each record's value
must be within ``BERTSCORE_TOLERANCE`` of the one computed again, and every metric and interval must follow to the
last digit from the submitted values (docs/submissions.md). The run submitted is made in a process whose torch takes
another numeric path (its non-vectorised kernels, MKL limited to AVX2), as another machine's would."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli import invoke_main
from extras import requires_extra
from submission_support import members, rewrite, submit

from rescue.errors import EXIT_NOT_VERIFIED
from rescue.runs.results import PREDICTIONS
from rescue.scoring.bertscore import SCORE_CACHE
from rescue.submissions.verify import BERTSCORE, BERTSCORE_TOLERANCE

pytestmark = [requires_extra("bertscore"), pytest.mark.slow]

# What changes the bits of torch's float32 arithmetic in a process: ATen's kernels without vectors, MKL's
# without AVX-512. Where neither differs from what this process uses, the first test says so and skips.
ANOTHER_PATH = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
BERTSCORE_CHECK = "BERTScore computed again"


@pytest.fixture(scope="module")
def other_path_run(tmp_path_factory: pytest.TempPathFactory, data: Path) -> Path:
    """``rescue run`` of the nearest-example baseline on ER and VP with BERTScore, in a process of its own whose
    torch takes another numeric path."""
    out = tmp_path_factory.mktemp("bertscore") / "run"
    made = subprocess.run([sys.executable, "-m", "rescue", "run", "--model", "baseline/nearest", "--tasks", "er,vp",
                           "--data", str(data), "--out", str(out), "-q"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **ANOTHER_PATH})
    assert made.returncode == 0, made.stderr
    return out


@pytest.fixture(scope="module")
def other_path_bundle(other_path_run: Path) -> Path:
    return submit(other_path_run, other_path_run.parent / "bertscore.rescue.zip")


def _verify(bundle: Path, data: Path) -> tuple[int, str, dict[str, dict[str, object]]]:
    """The exit code, the output and the verdict's checks by name."""
    result = invoke_main(["verify", str(bundle), "--data", str(data)])
    verdict = json.loads(bundle.with_name(bundle.name.removesuffix(".zip") + ".verdict.json").read_text())
    return result.exit_code, result.output, {c["name"]: c for c in verdict["checks"]}


def _records(predictions: bytes) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in predictions.splitlines()]


def _first_scored(predictions: bytes) -> dict:  # type: ignore[type-arg]
    """The first ER record with a BERTScore above 0 (an ER record's is its one pair's score)."""
    return next(r for r in _records(predictions) if r["task"] == "er" and r["scores"].get(BERTSCORE))


def test_a_bundle_scored_by_another_numeric_path_verifies(other_path_bundle: Path, data: Path) -> None:
    code, output, checks = _verify(other_path_bundle, data)
    assert code == 0, output
    bertscore = checks[BERTSCORE_CHECK]
    assert bertscore["passed"], bertscore
    found = re.fullmatch(r"(\d+) values within (\S+) of the submitted \(largest difference (\S+)\)",
                         str(bertscore["detail"]))
    assert found, bertscore["detail"]
    assert int(found[1]) == sum(BERTSCORE in r["scores"] for r in _records(members(other_path_bundle)[PREDICTIONS]))
    assert float(found[2]) == BERTSCORE_TOLERANCE and float(found[3]) <= BERTSCORE_TOLERANCE
    if float(found[3]) == 0:
        pytest.skip(f"this machine's torch computes the same bits with {ANOTHER_PATH} as without: the bundle's "
                    "BERTScore took no other numeric path (the tolerance is tested by the forged bundles below)")
    # The other path's values are the ones every metric and interval followed from, to the last digit.
    assert checks["every metric to the last digit"]["passed"]
    assert "with the submitted BERTScore values" in str(checks["every metric to the last digit"]["detail"])
    assert checks["every interval to the last digit"]["passed"]


def test_the_leaderboard_adds_a_bundle_scored_by_another_numeric_path(other_path_bundle: Path, data: Path,
                                                                     tmp_path: Path) -> None:
    added = invoke_main(["leaderboard", "add", str(other_path_bundle), "--to", str(tmp_path / "entries"),
                         "--data", str(data)])
    assert added.exit_code == 0, added.output
    verdicts = [json.loads(path.read_text()) for path in (tmp_path / "entries").glob("*.verdict.json")]
    assert [v["level"] for v in verdicts] == ["checked"]
    assert any(c["name"] == BERTSCORE_CHECK and c["passed"] for c in verdicts[0]["checks"])


def _moved_in_the_run(run: Path, folder: Path, by: float) -> tuple[Path, dict]:  # type: ignore[type-arg]
    """A copy of ``run`` whose first ER record's BERTScore is moved by ``by`` and everything re-made from it by
    ``rescue rescore`` (the forger's way: the pair's score edited in the run's score cache, the run re-scored, so
    its records, metrics and intervals agree); the bundle and the record as it was."""
    copy = folder / "forged-run"
    shutil.copytree(run, copy)
    record = _first_scored((run / PREDICTIONS).read_bytes())
    database = sqlite3.connect(copy / SCORE_CACHE)
    with database:
        moved = database.execute("UPDATE scores SET f1 = f1 + ? WHERE f1 = ?",
                                 (by, record["scores"][BERTSCORE])).rowcount
    database.close()
    assert moved == 1
    rescored = invoke_main(["rescore", str(copy)])
    assert rescored.exit_code == 0, rescored.output
    return submit(copy, folder / "forged.rescue.zip"), record


def test_a_bertscore_moved_beyond_the_tolerance_fails_naming_the_record(other_path_run: Path, data: Path,
                                                                          tmp_path: Path) -> None:
    bundle, record = _moved_in_the_run(other_path_run, tmp_path, 10 * BERTSCORE_TOLERANCE)
    code, output, checks = _verify(bundle, data)
    assert code == EXIT_NOT_VERIFIED, output
    detail = str(checks[BERTSCORE_CHECK]["detail"])
    assert checks[BERTSCORE_CHECK]["passed"] is False
    assert f"baseline/nearest {record['instance_id']}: {BERTSCORE}" in detail and "submitted" in detail
    assert "re-derived" in detail and "apart (over" in detail
    assert checks["every answer re-parsed and re-scored"]["passed"]  # everything else re-derives


def test_a_bertscore_moved_within_the_tolerance_and_followed_by_every_number_verifies(
        other_path_run: Path, data: Path, tmp_path: Path) -> None:
    # The contract: a submitter may move a BERTScore by at most the tolerance, as long as every metric and interval
    # follows from the values submitted (docs/submissions.md).
    bundle, _ = _moved_in_the_run(other_path_run, tmp_path, BERTSCORE_TOLERANCE / 2)
    code, output, checks = _verify(bundle, data)
    assert code == 0, output
    assert checks[BERTSCORE_CHECK]["passed"] and checks["every metric to the last digit"]["passed"]


def _record_edited(bundle: Path, out: Path, change: Callable[[float], float | None]) -> tuple[Path, str]:
    """``bundle`` with its first scored ER record's BERTScore changed in ``predictions.jsonl`` alone (hashes
    updated); the bundle and the record's instance id."""
    target = _first_scored(members(bundle)[PREDICTIONS])["instance_id"]
    lines = []
    for record in _records(members(bundle)[PREDICTIONS]):
        if record["instance_id"] == target and record["task"] == "er":
            record["scores"][BERTSCORE] = change(record["scores"][BERTSCORE])
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return rewrite(bundle, out, {PREDICTIONS: "".join(lines).encode()}, rehash=True), str(target)


# The record alone edited: what fails, and what it names.
RECORD_EDITS = [
    ("within the tolerance: the metrics no longer follow", lambda v: v + BERTSCORE_TOLERANCE / 2, True,
     "every metric to the last digit", f"baseline/nearest er all: {BERTSCORE}"),
    ("beyond the tolerance", lambda v: v - 3 * BERTSCORE_TOLERANCE, False, BERTSCORE_CHECK, "apart (over"),
    ("no number", lambda v: None, False, BERTSCORE_CHECK, "not both numbers"),
]


@pytest.mark.parametrize("name,change,bertscore_passes,failed,named", RECORD_EDITS, ids=[e[0] for e in RECORD_EDITS])
def test_a_bertscore_edited_in_the_record_alone_fails(other_path_bundle: Path, data: Path, tmp_path: Path, name: str,
                                                      change: Callable[[float], float | None], bertscore_passes: bool,
                                                      failed: str, named: str) -> None:
    bundle, instance = _record_edited(other_path_bundle, tmp_path / "edited.rescue.zip", change)
    code, output, checks = _verify(bundle, data)
    assert code == EXIT_NOT_VERIFIED, output
    assert checks[BERTSCORE_CHECK]["passed"] is bertscore_passes
    assert checks[failed]["passed"] is False and named in str(checks[failed]["detail"]), checks[failed]
    if not bertscore_passes:
        assert instance in str(checks[BERTSCORE_CHECK]["detail"])
