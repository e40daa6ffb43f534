"""Fine-tuning and datasets exports (issue 27 item 3): a chat export round-trips through `rescue run`, and a
datasets folder loads with `datasets.load_from_disk` and with `rescue.load`."""

from __future__ import annotations

import json

import pytest

import rescue
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
