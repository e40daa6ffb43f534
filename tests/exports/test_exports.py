"""Fine-tuning and datasets exports (issue 27 item 3): a chat export round-trips through `rescue run`, and a
datasets folder loads with `datasets.load_from_disk` and with `rescue.load`."""

from __future__ import annotations

import json
import re

import pytest

import rescue
from rescue.data.reading import demo_path
from rescue.testing.openai_server import Reply, request_key, serve
from _cli import invoke_main

CLOSED = {"itp": "f1", "rpp": "accuracy", "stp": "recall_at_1", "ssp": "mrr"}


def _oracle_from_export(path):
    """A scripted model that answers each request with the export's assistant turn for that prompt."""
    answers = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        example = json.loads(line)
        answers[request_key({"messages": example["messages"][:-1]})] = example["messages"][-1]["content"]

    def script(body):
        answer = answers.get(request_key(body))
        return Reply.text(answer) if answer is not None else Reply.error(400, "not in the export")

    return script


@pytest.mark.slow
def test_a_model_answering_with_the_chat_export_scores_perfectly(tmp_path):
    out = tmp_path / "train.jsonl"
    exported = invoke_main(["export", "--format", "chat", "--tasks", "itp,rpp,stp,ssp,er,vp", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    examples = [json.loads(line) for line in out.read_text().splitlines()]
    assert {e["metadata"]["task"] for e in examples} == {"itp", "rpp", "stp", "ssp", "er", "vp"}
    assert all(e["messages"][-1]["role"] == "assistant" and e["messages"][0]["role"] == "user" for e in examples)
    with serve(_oracle_from_export(out)) as server:
        run = invoke_main(["run", "--model", "tuned", "--base-url", server.base_url, "--tasks", "itp,rpp,stp,ssp,er,vp",
                           "--no-bertscore", "--quiet", "--out", str(tmp_path / "run")],
                          env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
        assert run.exit_code == 0, run.output
        assert server.request_count == len(examples)  # every prompt rescue sent is one the export holds
    results = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["tuned"]
    for task, metric in CLOSED.items():
        assert results[task]["all"][metric] == 1.0 and results[task]["all"]["failures"] == 0, task
    assert results["er"]["all"]["failures"] == 0 and results["vp"]["all"]["failures"] == 0
    records = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    for record in (r for r in records if r["task"] == "er"):
        assert record["prediction"] == record["gold"]
    for record in (r for r in records if r["task"] == "vp"):  # the answer schema holds no attitude
        assert record["prediction"] == [{k: v[k] for k in ("source", "target", "viewpoint")} for v in record["gold"]]


def test_a_split_exports_only_its_samples(tmp_path):
    splits = tmp_path / "splits.json"
    assert invoke_main(["splits", "--out", str(splits), "--test", "0.5", "--dev", "0", "--quiet"]).exit_code == 0
    train = json.loads(splits.read_text())["splits"]["train"]
    out = tmp_path / "train.jsonl"
    result = invoke_main(["export", "--split", "train", "--splits", str(splits), "--tasks", "itp", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {json.loads(x)["metadata"]["sample_id"] for x in out.read_text().splitlines()} <= set(train)


def test_a_datasets_folder_of_samples_loads_both_ways_with_a_card(tmp_path, demo_samples):
    datasets = pytest.importorskip("datasets", reason="the 'hf' extra (datasets) is not installed")
    splits = tmp_path / "splits.json"
    assert invoke_main(["splits", "--out", str(splits), "--test", "0.5", "--dev", "0", "--quiet"]).exit_code == 0
    out = tmp_path / "hf"
    result = invoke_main(["export", "--format", "hf", "--kind", "samples", "--all-splits", "--splits", str(splits),
                          "--out", str(out)])
    assert result.exit_code == 0, result.output
    loaded = datasets.load_from_disk(str(out))
    assert set(loaded) == {"train", "test"}
    assert sum(len(loaded[name]) for name in loaded) == len(demo_samples)
    card = (out / "README.md").read_text()
    for needed in ("license:", "Table 3", "## Fields", "## Citation", "arXiv:2609.09657", "Therapist share"):
        assert needed in card
    back = {s.sample_id: s.model_dump(mode="json") for s in rescue.load(out)}
    assert back == {s.sample_id: s.model_dump(mode="json") for s in demo_samples}  # origin (file, line) aside


def test_a_datasets_folder_of_instances_holds_the_exact_prompts(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the 'hf' extra (datasets) is not installed")
    chat = tmp_path / "all.jsonl"
    assert invoke_main(["export", "--tasks", "itp,stp", "--out", str(chat)]).exit_code == 0
    out = tmp_path / "hf"
    assert invoke_main(["export", "--format", "hf", "--tasks", "itp,stp", "--out", str(out)]).exit_code == 0
    table = datasets.load_from_disk(str(out))["all"]
    examples = [json.loads(x) for x in chat.read_text().splitlines()]
    assert len(table) == len(examples)
    assert table[0]["messages"] == examples[0]["messages"][:-1] and table[0]["answer"] == examples[0]["messages"][-1]["content"]
    not_samples = invoke_main(["stats", "--data", str(out)])
    assert not_samples.exit_code == 2 and "record" in not_samples.output


def test_the_dataset_card_describes_exactly_the_fields_each_row_has(demo_samples):
    from rescue.exports.chat import chat_examples
    from rescue.exports.hf import INSTANCE_FIELDS, SAMPLE_FIELDS, InstanceRow, SampleRow, instance_rows, sample_rows
    from rescue.tasks import get_task

    assert list(SAMPLE_FIELDS) == list(SampleRow.__annotations__) == list(sample_rows(demo_samples[:1])[0])
    examples = list(chat_examples(demo_samples[:1], [get_task("itp")]))
    assert list(INSTANCE_FIELDS) == list(InstanceRow.__annotations__) == list(instance_rows(examples[:1])[0])


def _source_lines(path):
    return [line.rstrip("\r\n") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("which", ["demo", "real"])
def test_a_samples_export_holds_each_record_exactly_as_the_release_does(tmp_path, request, which):
    # Issue 35 item 4: a dump of the model added null relation_cycle_* keys to 20 of the 35 real records.
    datasets = pytest.importorskip("datasets", reason="the 'hf' extra (datasets) is not installed")
    source = demo_path() if which == "demo" else request.getfixturevalue("real_data_path")
    out = tmp_path / "hf"
    result = invoke_main(["export", "--format", "hf", "--kind", "samples", "--data", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = datasets.load_from_disk(str(out))["all"]["record"]
    lines = _source_lines(source)
    assert records == lines  # byte for byte: the same keys, order, numbers and escapes
    assert [json.loads(r) for r in records] == [json.loads(x) for x in lines]
    again = tmp_path / "again"  # and the folder read back exports the same bytes again
    assert invoke_main(["export", "--format", "hf", "--kind", "samples", "--data", str(out), "--out",
                        str(again)]).exit_code == 0
    assert datasets.load_from_disk(str(again))["all"]["record"] == lines


def test_a_sample_made_in_code_is_exported_with_the_fields_it_was_given(demo_samples):
    from rescue.data.models import Sample

    made = Sample.model_validate(json.loads(demo_samples[0].release_json()))
    record = json.loads(made.release_json())
    assert record == json.loads(demo_samples[0].release_json())
    assert "relation_cycle_state" not in json.loads(Sample(sample_id="a/b", scenario="couple", rows=[
        {"row_index": 1, "start_time": 0, "end_time": 1, "primary_speaker": "Therapist"}]).release_json())["rows"][0]


def test_a_chat_export_creates_the_folder_of_its_file(tmp_path):
    out = tmp_path / "new" / "deeper" / "train.jsonl"
    result = invoke_main(["export", "--tasks", "itp", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.read_text().count("\n") > 0
    folder = invoke_main(["export", "--tasks", "itp", "--out", str(tmp_path / "new")])
    assert folder.exit_code == 2 and "a folder; --format chat writes one .jsonl file" in folder.output


def test_rescue_tasks_names_prompts_that_instances_share_with_different_golds(tmp_path):
    # Two clips that open alike render the same prompt for row 1 (no prior context) while the golds differ: an
    # oracle answering with the export's assistant turns cannot score 1.0; `rescue tasks` names them.
    first = json.loads(_source_lines(demo_path())[0])
    twin = json.loads(json.dumps(first))
    twin["sample_id"] = first["sample_id"].replace("001_session", "002_session")
    labels = sorted({row["relation_pattern"] for row in first["rows"] if row.get("relation_pattern")})
    for row in twin["rows"]:
        if row.get("relation_pattern"):
            row["relation_pattern"] = labels[(labels.index(row["relation_pattern"]) + 1) % len(labels)]
    data = tmp_path / "twins.jsonl"
    data.write_text(json.dumps(first) + "\n" + json.dumps(twin) + "\n", encoding="utf-8")
    result = invoke_main(["tasks", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert "are identical across instances whose gold answers differ" in result.output
    named = re.findall(r"rpp: (\S+)#row(\d+) \(gold [^)]+\), (\S+)#row(\d+) \(gold ", result.output)
    assert named and all(a == first["sample_id"] and b == twin["sample_id"] and m == n for a, m, b, n in named)
    as_json = invoke_main(["tasks", "--data", str(data), "--format", "json"])
    assert json.loads(as_json.stdout)["rpp"] and "rpp: " in as_json.stderr  # stdout stays JSON
    plain = invoke_main(["tasks"])
    assert plain.exit_code == 0 and "identical across instances" not in plain.output


def test_the_real_samples_name_the_rpp_prompts_shared_by_two_clips(real_data_path):
    result = invoke_main(["tasks", "--data", str(real_data_path)])
    assert result.exit_code == 0, result.output
    assert "rpp: alexes_and_casimar/001_s03e04_ct09_segment07#row1 (gold attack_attack)" in result.output
