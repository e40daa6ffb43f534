"""Every file rescue reads back is untrusted input (issue #42, item 4): the attack table, file x corruption.

Each file is made by the real command that writes it, corrupted as a hostile user or a broken disk would, then
read by the real command that reads it again (through ``rescue.cli.main``: the exit codes and messages users
see). A refused corruption exits 2 naming the file and the line or field, prints no traceback, and leaves the
file byte for byte as it was. A corruption a file's format tolerates by design (an extra key of
``results.json``, which later versions of the same schema may add) must end as the pristine file does.
docs/splits-and-exports.md, docs/runs.md, docs/build.md and docs/review.md carry the table in words.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _cli import invoke_main

from rescue.data.reading import demo_path
from rescue.data.readback import MAX_DEPTH

HUGE_INT = "9" * 5000
_HUGE = "__huge_int__"


@dataclass(frozen=True)
class Target:
    """A file to corrupt: where it lies, the command that reads it, and the fields the corruptions aim at."""

    path: Path
    command: list[str]
    number: tuple[str | int, ...]  # a numeric field: 1e308, NaN, Infinity, 5000 digits, "many" go there
    required: tuple[str | int, ...]  # a key the reader needs: removed
    extra_refused: bool = True  # a key it does not know: refused (else tolerated by design)
    lines: bool = False  # JSON lines: the corruption goes into the first line
    after: Callable[[Path], None] | None = None  # run after corrupting (predictions: results.json names its hash)
    env: dict[str, str | None] | None = None
    tolerated: tuple[str, ...] = ()  # other corruptions the format takes by design (a draft's problems for review)


def _get(value: Any, path: tuple[str | int, ...]) -> Any:
    for part in path[:-1]:
        value = value[part]
    return value


def _set(document: Any, path: tuple[str | int, ...], new: Any) -> Any:
    _get(document, path)[path[-1]] = new
    return document


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1).replace(f'"{_HUGE}"', HUGE_INT)


CORRUPTIONS: dict[str, Callable[[Any, Target], Any]] = {
    "1e308": lambda doc, t: _set(doc, t.number, 1e308),
    "NaN": lambda doc, t: _set(doc, t.number, float("nan")),
    "Infinity": lambda doc, t: _set(doc, t.number, float("inf")),
    "-Infinity": lambda doc, t: _set(doc, t.number, float("-inf")),
    "5000-digit int": lambda doc, t: _set(doc, t.number, _HUGE),
    "wrong type": lambda doc, t: _set(doc, t.number, "many"),
    "a list for an object": lambda doc, t: _set(doc, t.number[:-1], [1, 2]) if len(t.number) > 1 else [doc],
    "missing key": lambda doc, t: (_get(doc, t.required).pop(t.required[-1]), doc)[1],
    "extra key": lambda doc, t: {**doc, "surprise": {"x": 1}},
    "deep nesting in a field": lambda doc, t: _set(doc, t.number, _nest(MAX_DEPTH + 10)),
}
WHOLE = {  # corruptions of the whole text
    "100,000 brackets": lambda text: "[" * 100_000,
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not UTF-8": lambda text: "\udcff" + text,
    "a bare number": lambda text: "1e999",
}


def _nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _field_named(output: str, target: Target, corruption: str) -> bool:
    """The corrupted field's own name (or the key removed) appears in the message."""
    if corruption == "missing key":
        return str(target.required[-1]) in output
    if corruption == "extra key":
        return "surprise" in output
    if corruption == "a list for an object":  # the object that holds the number, or the whole file
        return str(target.number[-2]) in output if len(target.number) > 1 else any(
            said in output for said in ("object", "(top level)"))
    return str(target.number[-1]) in output


# --- the files, each made by the command that writes it ------------------------------------------------------


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Iterator[dict[str, Target]]:
    from batch_support import oracle, prices

    from rescue.testing.openai_server import serve

    root = tmp_path_factory.mktemp("readback")
    targets: dict[str, Target] = {}
    answers, oracle_script = oracle()

    def script(body: dict[str, Any]) -> Any:  # the run's ITP requests get their right answer; a build's get {}
        from rescue.testing.openai_server import Reply, request_key

        return oracle_script(body) if request_key(body) in answers else Reply.text("{}")

    with serve(script) as server:
        _made(root, targets, server, prices(root))
        yield targets


def _made(root: Path, targets: dict[str, Target], server: Any, price_file: str) -> None:

    plan = root / "splits.json"
    assert invoke_main(["splits", "--out", str(plan), "--quiet"]).exit_code == 0
    targets["splits.json"] = Target(plan, ["export", "--format", "chat", "--tasks", "itp", "--split", "train",
                                           "--splits", str(plan), "--out", str(root / "train.jsonl")],
                                    number=("test",), required=("scheme",))

    run = root / "run"
    result = invoke_main(["run", "--out", str(run), "--tasks", "itp", "--limit-samples", "2", "--no-bertscore", "--quiet"])
    assert result.exit_code == 0, result.output
    report = ["report", str(run), "--out", str(root / "report"), "--bootstrap", "20", "--no-figures"]
    targets["results.json"] = Target(run / "results.json", report, number=("run", "elapsed_s"),
                                     required=("config",), extra_refused=False)

    def rehash(predictions: Path) -> None:  # a hostile edit that also fixes the hash results.json names
        results = run / "results.json"
        data = json.loads(results.read_text())
        data["predictions"]["sha256"] = hashlib.sha256(predictions.read_bytes()).hexdigest()
        results.write_text(json.dumps(data))

    targets["predictions.jsonl"] = Target(run / "predictions.jsonl", report, number=("scores", "correct"),
                                          required=("task",), extra_refused=False, lines=True, after=rehash)

    bench = root / "bench"
    result = invoke_main(["review", "init", str(bench), "--benchmark", "--data", str(demo_path()), "--tasks", "itp"])
    assert result.exit_code == 0, result.output
    targets["benchmark.json"] = Target(bench / "benchmark.json", ["review", "assign", str(bench)],
                                       number=("per_instance",), required=("data",))

    from rescue.testing.review_project import make_review_project

    project = make_review_project(root / "project", max_seconds=30, media=False)
    first = json.loads((project / "draft.jsonl").read_text().splitlines()[0])["sample_id"]
    (project / "manifest.json").write_text(json.dumps({"version": 1, "segments": [{
        "sample_id": first, "source_video": "videos/a.mp4", "start": 0.0, "end": 31.0, "problems": [],
        "provenance": {"model": "synthetic"}}]}))
    draft_command = ["review", "export", str(project), "--out", str(root / "verified-draft.jsonl")]
    targets["draft.jsonl (review)"] = Target(
        project / "draft.jsonl", draft_command, lines=True, number=("rows", 0, "start_time"), required=("rows",),
        extra_refused=False, tolerated=("wrong type",))  # a time of "many" is a problem the reviewer sees and fixes
    targets["manifest.json (review)"] = Target(
        project / "manifest.json", ["review", "export", str(project), "--out", str(root / "verified.jsonl")],
        number=("segments", 0, "start"), required=("segments", 0, "sample_id"), extra_refused=False)

    keys = {"OPENAI_API_KEY": "sk-readback-0123456789abcdef"}
    batch_run = ["run", "--model", "m", "--base-url", server.base_url, "--batch", "--batch-poll", "0.01", "--tasks",
                 "itp", "--limit-samples", "1", "--out", str(root / "batch-run"), "--prices", price_file,
                 "--no-bertscore", "--quiet"]
    result = invoke_main(batch_run, env=keys)
    assert result.exit_code == 0, result.output
    targets["batches.json"] = Target(root / "batch-run" / "batches.json", batch_run, env=keys, extra_refused=False,
                                     number=("batches", 0, "answered"), required=("batches", 0, "batch_id"))

    from media_helpers import make_video

    build = root / "build"
    transcripts = build / "transcripts" / "g"
    transcripts.mkdir(parents=True)
    (transcripts / "session.srt").write_text("1\n00:00:01,000 --> 00:00:03,000\nSPEAKER_1: hello there\n\n"
                                            "2\n00:00:04,000 --> 00:00:06,000\nSPEAKER_2: hi\n")
    (transcripts / "session.chunks.json").write_text(json.dumps({"version": 1, "audio_seconds": 20.0, "chunks": [
        {"number": 1, "start": 0.0, "end": 20.0, "own_from": 0.0, "own_to": 20.0, "reconciled": True}]}))
    video = make_video(root / "session.mp4", 20.0)
    targets["chunks.json"] = Target(
        transcripts / "session.chunks.json",
        ["build", str(video), "--out", str(build), "--transcribe", "openai/whisper-1", "--transcribe-base-url",
         server.base_url, "--scenario", "couple", "--participants", "Alan,Evelyn", "--group", "g",
         "--speaker-map", "SPEAKER_1=Alan,SPEAKER_2=Evelyn"], env=keys,
        number=("chunks", 0, "own_to"), required=("audio_seconds",))

    from media_helpers import conversation, write_srt

    spoken = conversation(30.0)
    annotated = root / "annotated"
    build_command = ["build", str(make_video(root / "s.mp4", 30.0, speech=spoken)), "--subs",
                     str(write_srt(root / "s.srt", spoken)), "--out", str(annotated), "--scenario", "couple",
                     "--participants", "Alan,Evelyn", "--group", "g", "--model", "m", "--base-url", server.base_url,
                     "--min-duration", "5", "--no-align-check"]
    result = invoke_main(build_command, env=keys)
    assert result.exit_code == 0, result.output
    targets["work/<segment>/draft.json"] = Target(annotated / "work" / "g" / "s_segment01" / "draft.json",
                                                  build_command, env=keys, number=("requests",), required=("rows",))


FILES = ["splits.json", "results.json", "predictions.jsonl", "benchmark.json", "manifest.json (review)", "batches.json",
         "chunks.json", "work/<segment>/draft.json", "draft.jsonl (review)"]


def _corrupt(target: Target, corruption: str) -> None:
    text = target.path.read_text(encoding="utf-8")
    if corruption in WHOLE:
        changed = WHOLE[corruption](text)
        target.path.write_bytes(changed.encode("utf-8", "surrogateescape"))
        return
    if target.lines:
        first, rest = text.split("\n", 1)
        line = _dump(CORRUPTIONS[corruption](json.loads(first), target)).replace("\n", "")
        target.path.write_text(line + "\n" + rest, encoding="utf-8")
    else:
        target.path.write_text(_dump(CORRUPTIONS[corruption](json.loads(text), target)), encoding="utf-8")


@pytest.mark.parametrize("corruption", [*CORRUPTIONS, *WHOLE])
@pytest.mark.parametrize("name", FILES)
def test_a_corrupted_file_is_named_and_left_as_it_is(made, name, corruption):
    target = made[name]
    pristine = {p: p.read_bytes() for p in target.path.parent.iterdir() if p.is_file()}
    tolerated = (corruption == "extra key" and not target.extra_refused) or corruption in target.tolerated
    baseline = invoke_main(target.command, env=target.env) if tolerated else None
    try:
        _corrupt(target, corruption)
        if target.after is not None:
            target.after(target.path)
        corrupted = target.path.read_bytes()
        result = invoke_main(target.command, env=target.env)
        assert "Traceback" not in result.output
        if baseline is not None:  # tolerated by design: as the pristine file
            assert result.exit_code == baseline.exit_code, result.output
        else:
            assert result.exit_code == 2, result.output
            assert target.path.name in result.output, result.output
            if corruption in CORRUPTIONS:
                assert _field_named(result.output, target, corruption), result.output
        assert target.path.read_bytes() == corrupted  # nothing the command did changed the file
    finally:
        for path, data in pristine.items():
            path.write_bytes(data)


# --- cache rows: an answer that cannot be trusted is forgotten and asked again ------------------------------------

ROWS = {
    "usage of many tokens": ("usage", '{"input_tokens": "many", "output_tokens": 1}'),
    "usage NaN": ("usage", '{"input_tokens": NaN, "output_tokens": 1}'),
    "usage 1e308 seconds": ("usage", '{"input_tokens": 1, "audio_seconds": 1e308}'),
    "usage of 5000 digits": ("usage", '{"input_tokens": ' + HUGE_INT + "}"),
    "usage with a key Usage lacks": ("usage", '{"input_tokens": 1, "surprise": 2}'),
    "usage nested": ("usage", "[" * 100_000),
    "usage truncated": ("usage", '{"input_tokens": 1, "outp'),
    "meta a list": ("meta", "[1, 2]"),
    "meta Infinity": ("meta", '{"x": Infinity}'),
}


@pytest.mark.parametrize("corruption", list(ROWS))
def test_a_cached_answer_that_cannot_be_read_back_is_asked_again(tmp_path, corruption):
    import sqlite3

    from batch_support import oracle

    from rescue.testing.openai_server import serve

    column, value = ROWS[corruption]
    _, script = oracle()
    keys = {"OPENAI_API_KEY": "sk-readback-0123456789abcdef"}
    with serve(script) as server:
        command = ["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp", "--limit-samples", "1",
                   "--out", str(tmp_path / "run"), "--no-bertscore", "--quiet"]
        assert invoke_main(command, env=keys).exit_code == 0
        first = len(server.requests)
        with sqlite3.connect(tmp_path / "run" / "cache.sqlite") as db:
            spoilt = db.execute(f"UPDATE answers SET {column} = ? WHERE rowid IN "
                                "(SELECT rowid FROM answers ORDER BY rowid LIMIT 2)", (value,)).rowcount
        result = invoke_main(command, env=keys)
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        assert len(server.requests) - first == spoilt == 2  # the two rows it could not trust, and no other
        with sqlite3.connect(tmp_path / "run" / "cache.sqlite") as db:
            assert not db.execute(f"SELECT count(*) FROM answers WHERE {column} = ?", (value,)).fetchone()[0]


@pytest.mark.parametrize("corruption", ["usage NaN", "usage nested", "usage truncated", "meta a list", "meta Infinity"])
def test_a_cached_answer_that_cannot_be_read_back_stops_a_submission_naming_it(tmp_path, corruption):
    import sqlite3

    from batch_support import oracle

    from rescue.testing.openai_server import serve

    column, value = ROWS[corruption]
    _, script = oracle()
    run = tmp_path / "run"
    with serve(script) as server:
        result = invoke_main(["run", "--model", "m", "--base-url", server.base_url, "--tasks", "itp",
                              "--limit-samples", "1", "--out", str(run), "--no-bertscore", "--quiet"],
                             env={"OPENAI_API_KEY": "sk-readback-0123456789abcdef"})
        assert result.exit_code == 0, result.output
    with sqlite3.connect(run / "cache.sqlite") as db:
        db.execute(f"UPDATE answers SET {column} = ? WHERE rowid = (SELECT min(rowid) FROM answers)", (value,))
    before = (run / "cache.sqlite").read_bytes()
    out = tmp_path / "bundle.zip"
    result = invoke_main(["submit", str(run), "--out", str(out), "--submitter", "lab", "--training-data", "none",
                          "--zero-shot"])
    assert result.exit_code == 2 and "cache.sqlite" in result.output and f"field {column}" in result.output, \
        result.output
    assert "Traceback" not in result.output and not out.exists() and (run / "cache.sqlite").read_bytes() == before
