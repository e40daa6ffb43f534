"""``rescue submit`` and ``rescue verify`` (issue #44): a scripted model judged by a scripted judge, the offline
baselines and people's answers each submit and verify; a bundle tampered with is refused naming what failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import invoke_main
from submission_support import members, rewrite, submit

from rescue.errors import EXIT_ERROR, EXIT_NOT_VERIFIED
from rescue.submissions.bundle import ANSWERS, INTERVALS, MANIFEST, MEMBERS, read_bundle
from rescue.runs.results import PREDICTIONS, RESULTS


def _verify(bundle: Path, data: Path, *extra: str):  # type: ignore[no-untyped-def]
    result = invoke_main(["verify", str(bundle), "--data", str(data), *extra])
    verdict_file = bundle.parent / (bundle.name.removesuffix(".zip") + ".verdict.json")
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else None
    return result, verdict


def test_a_scripted_model_with_a_judge_submits_and_verifies(model_bundle: Path, data: Path) -> None:
    bundle = read_bundle(model_bundle)
    manifest = bundle.manifest
    assert list(members(model_bundle)) == [m for m in MEMBERS if m != "human.json"]  # a model run has no people
    system = manifest.systems["scripted-model"]
    assert system.kind == "model" and system.answered_as == ["scripted-model-v2"]
    assert system.requests > 0 and system.input_tokens > 0 and system.answers > 0
    assert system.settings["temperature"] == 0.0 and "seed" in system.settings  # what each request was sent with
    assert manifest.state.parse == "strict"
    assert manifest.judges == ["judge-model"] and manifest.judge["scale"] == "likert"
    assert manifest.declarations.submitter == "test lab" and manifest.declarations.zero_shot is True
    assert manifest.state.complete and not manifest.state.rescored
    answers = [json.loads(line) for line in bundle.text(ANSWERS).splitlines()]
    assert {a["purpose"] for a in answers} >= {"judge"} and {a["model"] for a in answers} == {"scripted-model",
                                                                                                 "judge-model"}
    assert all(len(a["request_sha256"]) == 64 and a["finish_reason"] == "stop" for a in answers)
    records = [json.loads(line) for line in bundle.text(PREDICTIONS).splitlines()]
    judged = [r for r in records if r["task"] in ("er", "vp") and r["status"] == "ok"]
    assert judged and all(r["judge"] for r in judged)  # the judge's ratings with their notes travel in the records
    assert 0 < sum(r["status"] == "ok" for r in records) < len(records)

    result, verdict = _verify(model_bundle, data)
    assert result.exit_code == 0, result.output
    assert verdict["level"] == "checked" and verdict["passed"]
    names = [c["name"] for c in verdict["checks"]]
    assert "every answer re-parsed and re-scored" in names and "every interval to the last digit" in names
    assert all(c["passed"] for c in verdict["checks"] + verdict["audits"])
    markdown = model_bundle.parent / "scripted.rescue.verdict.md"
    assert "**Verdict: checked**" in markdown.read_text()


def test_the_offline_baselines_submit_and_verify(baseline_bundle: Path, data: Path) -> None:
    manifest = read_bundle(baseline_bundle).manifest
    assert {s.kind for s in manifest.systems.values()} == {"baseline"}
    assert "baseline/supervised" in manifest.systems
    result, verdict = _verify(baseline_bundle, data)
    assert result.exit_code == 0, result.output
    assert verdict["level"] == "checked"


@pytest.mark.slow
def test_people_submit_and_verify(tmp_path: Path, data: Path) -> None:
    from submission_support import human_run

    bundle = submit(human_run(tmp_path, data), tmp_path / "people.rescue.zip")
    read = read_bundle(bundle)
    manifest = read.manifest
    assert {s.kind for s in manifest.systems.values()} == {"human"}
    assert "human.json" in read.members  # each person's cells on what they answered
    intervals = json.loads(read.text(INTERVALS))
    bob = [c for c in intervals if c["system"] == "human/bob" and c["scope"] == "all" and c["column"] == "itp.f1"]
    assert bob and bob[0]["failures"] == 0  # bob answered 12: the rest is coverage, not failures
    assert any(c["system"] == "human/all/average" and c["low"] is None for c in intervals)  # the report's row
    result, verdict = _verify(bundle, data)
    assert result.exit_code == 0, result.output
    assert verdict["level"] == "checked"


def _edit_json_line(text: bytes, match: str, edit) -> bytes:  # type: ignore[no-untyped-def]
    lines = text.decode().splitlines()
    for number, line in enumerate(lines):
        if match in line:
            value = json.loads(line)
            edit(value)
            lines[number] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            break
    else:
        raise AssertionError(f"no line with {match}")
    return ("\n".join(lines) + "\n").encode()


def _results_edit(bundle: Path, edit) -> bytes:  # type: ignore[no-untyped-def]
    value = json.loads(members(bundle)[RESULTS])
    edit(value)
    return (json.dumps(value, indent=2) + "\n").encode()


def _manifest_edit(bundle: Path, edit) -> bytes:  # type: ignore[no-untyped-def]
    value = json.loads(members(bundle)[MANIFEST])
    edit(value)
    return (json.dumps(value, indent=2) + "\n").encode()


def _bump_f1(results: dict) -> None:  # type: ignore[type-arg]
    results["models"]["scripted-model"]["itp"]["all"]["f1"] += 1e-12


def _flip_itp_answer(data: dict) -> None:  # type: ignore[type-arg]
    before = data["text"]
    data["text"] = before.replace('"yes"', '"no"') if '"yes"' in before else before.replace('"no"', '"yes"')
    assert data["text"] != before


# Each tampering: a name, the members changed (from the untouched bundle), whether the hashes are updated, and
# what the verdict or the error must name. Exit 2: the bundle is refused before re-scoring; 1: a check failed.
TAMPERING = [
    ("a number edited, hash kept", lambda b: {RESULTS: _results_edit(b, _bump_f1)}, False, EXIT_ERROR,
     "results.json: its SHA-256 is not the one manifest.json lists"),
    ("a number edited, hash updated", lambda b: {RESULTS: _results_edit(b, _bump_f1)}, True, EXIT_NOT_VERIFIED,
     "scripted-model itp all: f1"),
    ("an instance dropped", lambda b: {PREDICTIONS: b"".join(
        line + b"\n" for line in members(b)[PREDICTIONS].splitlines()[1:])}, True, EXIT_NOT_VERIFIED, "predictions"),
    ("an answer edited", lambda b: {ANSWERS: _edit_json_line(members(b)[ANSWERS], 'should_speak', _flip_itp_answer)},
     True, EXIT_NOT_VERIFIED, "re-derived"),
    ("the data digest changed", lambda b: {MANIFEST: _manifest_edit(b, lambda m: m.update(data_sha256="0" * 64))},
     False, EXIT_ERROR, "data_sha256"),
    ("a prompt digest changed", lambda b: {MANIFEST: _manifest_edit(
        b, lambda m: m["tasks"]["rpp"].update(prompt_sha256="1" * 64))}, False, EXIT_NOT_VERIFIED,
     "rpp: prompts this rescue renders"),
    ("the model renamed in the manifest", lambda b: {MANIFEST: _manifest_edit(
        b, lambda m: m["systems"].update({"gpt-9": m["systems"].pop("scripted-model")}))}, False, EXIT_ERROR,
     "systems ['gpt-9'] but results.json holds"),
    ("an interval edited", lambda b: {INTERVALS: json.dumps(
        [dict(c, high=(c["high"] or 0) + 0.01) if i == 3 else c
         for i, c in enumerate(json.loads(members(b)[INTERVALS]))]).encode()}, True, EXIT_NOT_VERIFIED,
     "every interval to the last digit"),
]


@pytest.mark.parametrize("name,change,rehash,code,named", TAMPERING, ids=[t[0] for t in TAMPERING])
def test_a_tampered_bundle_is_refused_naming_what_failed(model_bundle: Path, data: Path, tmp_path: Path, name: str,
                                                         change, rehash: bool, code: int, named: str) -> None:  # type: ignore[no-untyped-def]
    forged = rewrite(model_bundle, tmp_path / "forged.rescue.zip", change(model_bundle), rehash=rehash)
    result, verdict = _verify(forged, data)
    assert result.exit_code == code, result.output
    assert named in result.output, result.output
    assert verdict is not None and not verdict["passed"] and verdict["level"] in ("refused", "failed")


# --- the steps that ask again: re-judged and reproduced ---------------------------------------------------------


def test_rejudged_by_the_pinned_judge_raises_the_level(model_bundle: Path, data: Path, tmp_path: Path) -> None:
    from submission_support import JUDGE_RATING

    from rescue.testing import Reply, serve

    with serve(Reply.json(JUDGE_RATING)) as judge:
        same = invoke_main(["verify", str(model_bundle), "--data", str(data), "--out", str(tmp_path), "--rejudge", "6",
                            "--judge-base-url", judge.base_url], env={"OPENAI_API_KEY": "test"})
        asked = judge.request_count
    assert same.exit_code == 0, same.output
    assert 0 < asked <= 6 * 2  # six answers, a re-ask at most where an answer was invalid
    verdict = json.loads((tmp_path / "scripted.rescue.verdict.json").read_text())
    assert verdict["level"] == "re-judged"
    assert "6 of 6 grades the same" in same.output

    harsher = dict(JUDGE_RATING, emotion_score=1, score=1, viewpoint_score=0, source_target_score=0)
    with serve(Reply.json(harsher)) as judge:
        other = invoke_main(["verify", str(model_bundle), "--data", str(data), "--out", str(tmp_path), "--rejudge", "6",
                             "--judge-base-url", judge.base_url], env={"OPENAI_API_KEY": "test"})
    assert other.exit_code == EXIT_NOT_VERIFIED, other.output
    assert "0 of 6 grades the same" in other.output
    assert json.loads((tmp_path / "scripted.rescue.verdict.json").read_text())["level"] == "checked"


def test_reproduced_by_the_same_model_raises_the_level(model_bundle: Path, data: Path, tmp_path: Path) -> None:
    from submission_support import MostlyRight

    from rescue.data.loading import load_samples
    from rescue.tasks import TASKS
    from rescue.testing import Reply, serve
    from rescue.testing.oracle import OracleScript

    oracle = OracleScript(load_samples(data), list(TASKS.values()), batch_size=1)
    with serve(MostlyRight(oracle)) as server:
        again = invoke_main(["verify", str(model_bundle), "--data", str(data), "--out", str(tmp_path), "--reproduce",
                             "3", "--model", "scripted-model", "--base-url", server.base_url],
                            env={"OPENAI_API_KEY": "test"})
        asked = server.request_count
    assert again.exit_code == 0, again.output
    assert 0 < asked <= 3 * len(TASKS) * 2
    assert "18 of 18 predictions reproduced" in again.output
    assert json.loads((tmp_path / "scripted.rescue.verdict.json").read_text())["level"] == "reproduced"

    with serve(Reply.json({"predictions": []})) as server:  # another model: nothing it says is what was submitted
        other = invoke_main(["verify", str(model_bundle), "--data", str(data), "--out", str(tmp_path), "--reproduce",
                             "3", "--model", "scripted-model", "--base-url", server.base_url],
                            env={"OPENAI_API_KEY": "test"})
    assert other.exit_code == EXIT_NOT_VERIFIED, other.output
    assert "predictions reproduced" in other.output


def test_a_limited_run_says_so_and_verifies_on_the_instances_it_took(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "limited"
    made = invoke_main(["run", "--model", "baseline/majority", "--data", str(data), "--limit", "4", "--no-bertscore",
                        "--out", str(run), "-q"])
    assert made.exit_code == 0, made.output
    bundle = submit(run, tmp_path / "limited.rescue.zip")
    manifest = read_bundle(bundle).manifest
    assert all(facts.instances <= 4 for facts in manifest.tasks.values()) and manifest.state.limited
    result, verdict = _verify(bundle, data)
    assert result.exit_code == 0, result.output
    assert verdict["level"] == "checked"


def test_a_run_of_several_epochs_submits_and_verifies_every_epoch(data: Path, tmp_path: Path) -> None:
    from submission_support import model_run

    run = model_run(tmp_path, data, tasks="itp,rpp", extra=("--epochs", "2"))
    bundle = submit(run, tmp_path / "epochs.rescue.zip")
    records = [json.loads(line) for line in read_bundle(bundle).text(PREDICTIONS).splitlines()]
    assert {r.get("epoch") for r in records} == {0, 1}
    result, verdict = _verify(bundle, data)
    assert result.exit_code == 0, result.output
    assert verdict["level"] == "checked"
