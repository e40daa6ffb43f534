"""--judge-repeats: the judge asked N times per item, each repeat its own request (not the first one's cached
answer), with the flip rate and Krippendorff's alpha across repeats in results.json and judge-agreement."""

from __future__ import annotations

import json
import threading
from collections import defaultdict

import krippendorff
import numpy as np

from test_judge_run import _script as predict

from rescue.testing.openai_server import Reply, message_text, serve


class _Judge:
    """A scripted server whose judge answers ER differently on the third asking of every other item (counted
    per prompt, in the order items first arrive) and VP always the same."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[str, int] = {}
        self.answers: dict[str, list[int]] = defaultdict(list)

    def __call__(self, body):
        text = message_text(body)
        if "You are grading" in text:
            if "viewpoint-understanding" in text:
                return Reply.json({"score": 3})
            with self.lock:
                item = self.order.setdefault(text, len(self.order))
                calls = len(self.answers[text])
                base = 1 + item % 5
                score = base % 5 + 1 if item % 2 == 0 and calls == 2 else base
                self.answers[text].append(score)
            return Reply.json({"emotion_score": score})
        return predict(body)  # the evaluated model: test_judge_run's


def _records(out):
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def test_judge_repeats_report_flip_rate_and_alpha_and_one_repeat_asks_as_before(tmp_path):
    from typer.testing import CliRunner

    from rescue.cli import app
    from rescue.engine.runner import RunConfig, run

    script = _Judge()
    common = dict(models=["model-x"], tasks=["er", "vp"], judges=["judge-a"], bertscore=False, limit_samples=1,
                  quiet=True, cache_dir=str(tmp_path / "cache"))
    with serve(script) as server:
        run(RunConfig(out=str(tmp_path / "once"), base_url=server.base_url, **common))
        once = [b for b in server.bodies if b["model"] == "judge-a"]
        run(RunConfig(out=str(tmp_path / "thrice"), base_url=server.base_url, judge_repeats=3, **common))
        thrice = [b for b in server.bodies if b["model"] == "judge-a"][len(once):]

    # N=1: one judge request per graded prediction, no trace of repeats anywhere.
    judged_once = [r for r in _records(tmp_path / "once") if r["task"] in ("er", "vp") and r["status"] == "ok"]
    assert len(once) == len(judged_once) > 0
    results_once = json.loads((tmp_path / "once" / "results.json").read_text())
    assert "judge_repeats" not in results_once["config"]
    assert "judge_stability" not in results_once["models"]["model-x"]
    assert all("repeats" not in g for r in judged_once for g in r["judge"]["judges"].values())

    # N=3 on the same cache: the first repeat is the first run's cached answer; repeats 2 and 3 are new requests.
    assert len(thrice) == 2 * len(judged_once)
    er_items = [answers for answers in script.answers.values()]
    assert all(len(a) == 3 for a in er_items)
    flips = sum(1 for a in er_items if len(set(a)) > 1)
    assert 0 < flips < len(er_items)
    expected_alpha = krippendorff.alpha(reliability_data=np.array(er_items, dtype=float).T,
                                        level_of_measurement="ordinal")

    results = json.loads((tmp_path / "thrice" / "results.json").read_text())
    assert results["config"]["judge_repeats"] == 3
    stability = results["models"]["model-x"]["judge_stability"]
    er = stability["er"]["judge-a"]
    assert (er["repeats"], er["items"], er["flips"]) == (3, len(er_items), flips)
    assert abs(er["flip_rate"] - flips / len(er_items)) < 1e-12
    assert abs(er["alpha"] - expected_alpha) < 1e-9
    vp = stability["vp"]["judge-a"]
    assert vp["flips"] == 0 and vp["flip_rate"] == 0.0 and vp["alpha"] is None  # always 3: alpha is 0/0

    # The first repeat's grade is the one that scores.
    for record in _records(tmp_path / "thrice"):
        if record["task"] == "er" and record["status"] == "ok":
            grade = record["judge"]["judges"]["judge-a"]
            assert len(grade["repeats"]) == 3
            assert record["scores"]["judge_emotion"] == grade["repeats"][0]["judge_emotion"]

    ratings = tmp_path / "ratings.csv"
    first = next(r for r in _records(tmp_path / "thrice") if r["task"] == "er" and r["status"] == "ok")
    ratings.write_text(f"instance_id,rater,score,task\n{first['instance_id']},ann,3,er\n")
    result = CliRunner().invoke(app, ["judge-agreement", str(tmp_path / "thrice"), "--ratings", str(ratings),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["stability"]["er"]["judge-a"]["flips"] == flips
    table = CliRunner().invoke(app, ["judge-agreement", str(tmp_path / "thrice"), "--ratings", str(ratings)])
    assert f"{flips} of {len(er_items)} item(s) flip" in table.output
