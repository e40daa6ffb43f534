"""Names from a run directory never become paths outside the report's ``--out`` (issue 33 item 5): a scenario is
one of the scenarios or the record is refused where ``predictions.jsonl`` is read; a system id, whatever it
holds, becomes a slug plus a hash. A run directory is what rescue may not have written: it is edited here, its
checksum made to match, as a hostile one would be."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from rescue.errors import EXIT_ERROR
from rescue.tasks.base import PredictionRecord
from _cli import invoke_main

RECORD = {"model": "m", "task": "rpp", "instance_id": "a/1#row2", "sample_id": "a/1", "row_index": 2, "gold": "x",
          "status": "ok"}


@pytest.mark.parametrize("scenario", ["../../../escaped", "/etc/x", "", "Couple", "couple\n", "fam\u200bily"])
def test_a_record_with_an_unknown_scenario_is_refused(scenario):
    with pytest.raises(ValidationError, match="is not one of: couple, family"):
        PredictionRecord.model_validate({**RECORD, "scenario": scenario})


def _edited_run(tmp_path, edit):
    run = tmp_path / "run"
    made = invoke_main(["run", "--model", "baseline/majority", "--tasks", "rpp", "--out", str(run), "--quiet"])
    assert made.exit_code == 0, made.output
    lines = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
    results = json.loads((run / "results.json").read_text())
    edit(lines, results)
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    results["predictions"]["sha256"] = hashlib.sha256((run / "predictions.jsonl").read_bytes()).hexdigest()
    (run / "results.json").write_text(json.dumps(results))
    return run


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_scenario_edited_into_a_path_stops_the_report_naming_the_line(tmp_path):
    def edit(lines, results):
        lines[0]["scenario"] = "../../../escaped"

    run = _edited_run(tmp_path, edit)
    before = _files(tmp_path)
    done = invoke_main(["report", str(run), "--out", str(tmp_path / "report"), "--bootstrap", "0", "--no-html"])
    assert done.exit_code == EXIT_ERROR, done.output
    assert f"{run / 'predictions.jsonl'}:1: field scenario:" in done.output
    assert _files(tmp_path) == before


@pytest.mark.slow
def test_a_system_id_that_is_a_path_names_files_inside_the_report(tmp_path):
    name = "../../../escaped\nname"

    def edit(lines, results):
        for line in lines:
            line["model"] = name
        (stats,) = results["models"].values()
        results["models"] = {name: stats}
        results["config"]["models"] = [name]

    run = _edited_run(tmp_path, edit)
    before = set(_files(tmp_path))
    out = tmp_path / "report"
    done = invoke_main(["report", str(run), "--out", str(out), "--bootstrap", "0", "--no-html"])
    assert done.exit_code == 0, done.output
    written = set(_files(tmp_path)) - before
    assert written and all(path.startswith("report/") for path in written)
    named = (out / "files.csv").read_text()
    assert "escaped_name-" in named  # a slug plus a hash of the whole id
