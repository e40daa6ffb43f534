"""A whole `rescue run` of ER and VP with a judge: the evaluated model and the judge are both served by the
scripted OpenAI-compatible server, so results.json shows what a real run with a judge writes."""

from __future__ import annotations

import json

from rescue.testing.openai_server import Reply, message_text, serve


def _script(body):
    text = message_text(body)
    if "You are grading" in text:
        if body["model"] == "judge-a":
            return Reply.json({"emotion_score": 4, "score": 3})
        return Reply.json({"emotion_score": 2, "score": 5})
    checkpoints = json.loads(text.rsplit("Checkpoints: ", 1)[1])
    items = []
    for checkpoint in checkpoints:
        speaker = checkpoint["current_turn"]["primary_speaker"]
        items.append({"checkpoint_id": checkpoint["checkpoint_id"], "emotion": "uneasy", "intensity": 5,
                      "viewpoints": [{"source": speaker, "target": "Therapist", "viewpoint": "she is fair"}]})
    return Reply.json({"predictions": items})


def test_run_with_two_judges_writes_judge_metrics(tmp_path):
    from rescue.engine.runner import RunConfig, run

    with serve(_script) as server:
        config = RunConfig(out=str(tmp_path / "run"), models=["model-x"], tasks=["er", "vp"], base_url=server.base_url,
                           judges=["judge-a", "judge-b"], bertscore=False, limit_samples=1, quiet=True)
        run(config)
        judge_requests = [b for b in server.bodies if b["model"].startswith("judge")]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    er_all = results["models"]["model-x"]["er"]["all"]
    vp_all = results["models"]["model-x"]["vp"]["all"]
    assert er_all["judge_emotion"] == 3.0  # mean of 4 and 2
    assert er_all["s_er"] == (3.0 + er_all["intensity"]) / 2
    assert vp_all["judge"] == 4.0
    assert er_all["judge_failures"] == 0 and er_all["judged"] == er_all["instances"]
    assert er_all["inter_judge_alpha"] < 0  # the two judges never agree: worse than chance
    assert judge_requests and all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in judge_requests)
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert all(set(r["judge"]["judges"]) == {"judge-a", "judge-b"} for r in records)


def test_report_shows_the_judge_columns_of_a_judged_run(tmp_path):
    from rescue.engine.runner import RunConfig, run
    from rescue.report.build import ReportOptions, build_report

    with serve(_script) as server:
        run(RunConfig(out=str(tmp_path / "run"), models=["model-x"], tasks=["er", "vp"], base_url=server.base_url,
                      judges=["judge-a"], bertscore=False, limit_samples=2, quiet=True))
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    build_report([tmp_path / "run"], tmp_path / "report", options=ReportOptions(n_resamples=50, html=False, figures=False))
    board = (tmp_path / "report" / "leaderboard.md").read_text()
    header, _, first = board.splitlines()[:3]
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in first.split("|")]))
    s_er = results["models"]["model-x"]["er"]["all"]["s_er"]
    assert cells["ER judge"].startswith(f"{s_er:.2f}")
    assert cells["VP judge"].startswith("3.00")  # judge-a gives 3 to every viewpoint
