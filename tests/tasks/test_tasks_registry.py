"""The task registry, instance counts per task and scenario, and `rescue tasks`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rescue.cli import app
from rescue.errors import RescueError
from rescue.tasks import TASK_NAMES, TASKS, get_task, task_counts
from rescue.tasks.base import Task
from _cli import invoke_main
from task_contract import check_task


def test_registry_holds_every_task_under_its_name():
    for name in ("itp", "rpp", "stp", "ssp"):
        assert TASKS[name].name == name and isinstance(TASKS[name], Task)
    assert list(TASKS) == [n for n in TASK_NAMES if n in TASKS]
    assert get_task(" RPP ") is TASKS["rpp"]


def test_unknown_task_is_a_clear_error():
    with pytest.raises(RescueError, match="unknown task 'itq'; known tasks: itp, rpp"):
        get_task("itq")


def test_task_counts_shape(demo_samples):
    counts = task_counts(demo_samples)
    assert list(counts) == list(TASKS)
    for per_scenario in counts.values():
        assert set(per_scenario) == {"couple", "family"}
        for cell in per_scenario.values():
            assert set(cell) == {"instances", "samples"} and cell["instances"] >= cell["samples"] >= 0
    assert task_counts(demo_samples, tasks=["stp"]) == {"stp": counts["stp"]}


def test_rescue_tasks_refuses_an_unknown_rpp_gold(demo_samples):
    result = invoke_main(["tasks", "--rpp-gold", "nope"])
    assert result.exit_code == 2 and "rpp_gold" in result.output and "relation_cycle_state" in result.output


def test_rescue_tasks_json_on_demo(demo_samples):
    result = CliRunner().invoke(app, ["tasks", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == task_counts(demo_samples)


def test_rescue_tasks_table_and_rpp_gold_on_real_data(real_data_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["tasks", "--data", str(real_data_path), "--format", "json", "--rpp-gold", "relation_cycle_state"]
    )
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)  # the shared-prompt note goes to stderr
    assert counts["rpp"]["family"] == {"instances": 431, "samples": 15}
    assert counts["itp"]["family"] == {"instances": 284, "samples": 16}
    table = runner.invoke(app, ["tasks", "--data", str(real_data_path)])
    assert table.exit_code == 0 and "525 (17)" in table.output and "2722 (168)" in table.output
    bad = runner.invoke(app, ["tasks", "--rpp-gold", "pattern"])
    assert bad.exit_code != 0


GOLD_FIELDS = {
    "internal_emotion",
    "viewpoints_attitudes",
    "support_strategy",
    "relation_pattern",
    "relation_cycle_state",
    "relation_pattern_reason",
    "relation_cycle_reason",
    "utterance_type",
}


def _keys(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from _keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _keys(inner)


@pytest.mark.parametrize("name", [n for n, t in TASKS.items() if t.declaration.answer in ("label", "ranking")])
def test_no_gold_field_reaches_a_prompt_on_real_data(name, real_samples):
    from rescue.tasks.base import RenderOptions

    task = get_task(name)
    for instance in task.build(real_samples):
        content = task.render([instance], RenderOptions(mode="audiovisual", context_size=3))[0]["content"]
        items = json.loads(content.split("Items:\n", 1)[1])
        assert not GOLD_FIELDS & set(_keys(items))
        assert items[0]["id"] == instance.instance_id.rsplit("#", 1)[1]


def test_spliced_row_json_equals_plain_encoding(demo_samples):
    # Prompts splice rows encoded once per sample; the text must equal encoding the whole structure at once.
    import json

    from rescue.tasks.render import EncodedRows, context_rows, dumps, render_row

    sample = demo_samples[0]
    for mode in ("dialogue", "audiovisual"):
        for k in (-1, 0, 3):
            rows = EncodedRows(sample, mode)
            spliced = dumps({"id": "row9", "prior_context": rows.context(9, k), "row": rows.row(9)})
            plain = json.dumps(
                {"id": "row9", "prior_context": [render_row(r, mode) for r in context_rows(sample, 9, k)],
                 "row": render_row(sample.row(9), mode)},
                ensure_ascii=False, separators=(",", ":"),
            )
            assert spliced == plain


def _row_record(row, mode, participants=None):
    """What a prompt shows of a row, written out plainly: the reference ``encode_row`` is checked against."""
    record = {"row_index": row.row_index, "primary_speaker": row.primary_speaker.strip()}
    if participants is not None:
        record["participants"] = participants
    record["target"] = list(row.target)
    record["dialogue_cleaned"] = row.dialogue_cleaned
    record["background_dialogue"] = [{"speaker": b.speaker, "target": list(b.target), "content": b.content}
                                     for b in row.background_dialogue if b.speaker and b.target and b.content]
    record["timestamp"] = f"{row.start_time:.3f}-{row.end_time:.3f}"
    if mode in ("audio", "audiovisual", "video+cues"):
        record["tone_of_voice"] = row.tone_of_voice
    if mode in ("visual", "audiovisual", "video+cues"):
        for name in ("body_posture", "facial_expressions", "self_directed_behavior"):
            record[name] = [{"person": c.person, "description": c.description} for c in getattr(row, name)]
        record["interaction_behavior"] = [{"initiator": c.initiator, "target": list(c.target),
                                           "description": c.description} for c in row.interaction_behavior]
    return record


def test_encoded_rows_are_the_standard_encoding_of_their_record(demo_samples):
    # encode_row writes the JSON itself (it is the hot path of rendering): byte for byte what json.dumps
    # gives for the record, on the demo rows and on text that needs escaping or is not ASCII.
    from rescue.data.models import Row
    from rescue.tasks.base import MODES
    from rescue.tasks.render import encode_row, render_row

    awkward = 'a "quoted" \\ back\\slash, tab\t, newline\n, bell\x07, NUL\x00, é, 漢字, 🙂, \u2028'
    odd = Row.model_validate({
        "row_index": 7, "start_time": 1.23456, "end_time": 12, "primary_speaker": f"  {awkward} ",
        "target": [awkward, ""], "dialogue_cleaned": awkward, "tone_of_voice": awkward, "utterance_type": "x",
        "background_dialogue": [{"speaker": "A", "target": ["B"], "content": awkward},
                                {"speaker": "", "target": ["B"], "content": "dropped: no speaker"},
                                {"speaker": "A", "target": [], "content": "dropped: no target"}],
        "body_posture": [{"person": awkward, "description": awkward, "extra": "not shown"}],
        "facial_expressions": [], "self_directed_behavior": [{"person": "A", "description": ""}],
        "interaction_behavior": [{"initiator": "A", "target": [awkward], "description": awkward}],
    })
    rows = [odd, *(row for sample in demo_samples for row in sample.rows)]
    for mode in MODES:
        for participants in (None, ["Ann", awkward]):
            for row in rows:
                record = _row_record(row, mode, participants)
                assert encode_row(row, mode, participants=participants) == json.dumps(
                    record, ensure_ascii=False, separators=(",", ":"))
                assert render_row(row, mode, participants=participants) == record


def test_dumps_splices_fragments_into_the_standard_encoding():
    from rescue.tasks.render import RawJSON, dumps

    values = [{"a": 1, "b": [1.5, True, None, "é\n"], "c": {}, "d": [], "e": ("t", 2)}, [], {}, "x", 3, None,
              [{"id": "row1", "nested": [{"deep": ["é", {"k": -0.0}]}]}]]
    for value in values:
        plain = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert dumps(value) == plain
        # the same value with one part given as pre-encoded JSON, in pieces
        wrapped = {"items": value, "raw": RawJSON("[", json.dumps(value, ensure_ascii=False, separators=(",", ":")), "]")}
        assert dumps(wrapped) == json.dumps({"items": value, "raw": [value]}, ensure_ascii=False, separators=(",", ":"))
    with pytest.raises(TypeError):
        dumps({1: RawJSON("1")})  # json.dumps would write the key as "1"; a spliced object takes text keys only


# --- declarations: build options -----------------------------------------------------------------------


def test_unknown_build_options_are_an_error_naming_task_and_known_options(demo_samples):
    from rescue.tasks.spec import TaskOptionError

    with pytest.raises(TaskOptionError, match=r"task rpp: rpp_gld: unknown option \(known options: rpp_gold\)"):
        get_task("rpp").build(demo_samples, rpp_gld="relation_pattern")
    with pytest.raises(TaskOptionError, match="checkpoint_per_sample: unknown option"):
        get_task("er").build(demo_samples, checkpoint_per_sample=3)
    with pytest.raises(TaskOptionError, match="itp_max_per_class"):
        get_task("itp").build(demo_samples, itp_max_per_class=-1)
    with pytest.raises(TaskOptionError, match="task stp: .*known options: none"):
        get_task("stp").build(demo_samples, rpp_gold="auto")


@pytest.mark.parametrize("name", list(TASKS))
def test_every_registered_task_keeps_the_contract(name, demo_samples):
    check_task(name, TASKS[name], demo_samples)


def test_the_paper_tasks_come_in_the_papers_order_with_its_counts():
    assert list(TASKS)[:6] == ["itp", "rpp", "stp", "ssp", "er", "vp"] and tuple(TASK_NAMES) == tuple(TASKS)
    for name in list(TASKS)[:6]:
        assert set(TASKS[name].declaration.paper_counts) == {"couple", "family"}, name


def test_task_options_parse_from_the_command_line_form():
    from rescue.tasks import parse_task_options
    from rescue.tasks.spec import TaskOptionError

    assert parse_task_options(["RPP.rpp_gold=relation_cycle_state", "er.checkpoints_per_sample=3"]) == {
        "rpp": {"rpp_gold": "relation_cycle_state"}, "er": {"checkpoints_per_sample": 3}}
    with pytest.raises(TaskOptionError, match="TASK.OPTION=VALUE"):
        parse_task_options(["rpp_gold=auto"])
    with pytest.raises(TaskOptionError, match="rpp_gld: unknown option"):
        parse_task_options(["rpp.rpp_gld=auto"])
    with pytest.raises(RescueError, match="unknown task 'rp'"):
        parse_task_options(["rp.rpp_gold=auto"])


def test_rescue_run_reaches_every_build_option(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--tasks", "er,itp", "--model", "baseline/majority",
                                      "--no-bertscore", "-q", "--task-option", "er.checkpoints_per_sample=1",
                                      "--task-option", "itp.itp_max_per_class=1"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["task_options"] == {"er": {"checkpoints_per_sample": 1}, "itp": {"itp_max_per_class": 1}}
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    er_samples = [r["sample_id"] for r in records if r["task"] == "er"]
    assert len(er_samples) == len(set(er_samples)) > 1  # one checkpoint per sample
    assert results["models"]["baseline/majority"]["er"]["all"]["instances"] == len(er_samples)
    bad = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "bad"), "--task-option", "rpp.rpp_gld=auto", "-q"])
    assert "rpp_gld: unknown option" in str(bad.exception) and not (tmp_path / "bad").exists()
