"""Scripted pre-annotation answers for ``rescue build`` tests and benchmarks, served by
:mod:`rescue.testing.openai_server`.

:func:`draft_script` reads the numbered subtitle lines and the closed entity set from each request's
prompt and answers with a draft that follows every rule, or one broken in a chosen way (missing keys,
an uncovered line, a row outside its line, a self-target, an unknown label, text that is not JSON, a few
rows of invented words in place of the lines). The
re-ask (the message listing violations) is answered correctly unless ``fix_on_reask`` is False.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable

# JsonObject is open here: a client's request and a model's draft rows, before rescue checks them
from rescue.data.shapes import JsonObject
from rescue.testing.openai_server import Reply

BROKEN_KINDS = ("missing_keys", "uncovered_line", "outside_cue", "self_target", "unknown_label", "not_json",
                "hallucinated")
# Answers no JSON reader takes as they are: a number past Python's 4300-digit limit, a lone UTF-16 surrogate.
# A float past the double range (1e999) reads as infinity.
HOSTILE_KINDS = ("big_number", "huge_float", "lone_surrogate")
_LINE = re.compile(r"^\[(\d+)\] (\d+(?:\.\d+)?)-(\d+(?:\.\d+)?) (?:([^:\n]{1,60}): )?(.*)$", re.MULTILINE)
_NAMES = re.compile(r"The only names allowed anywhere are: ([^\n]+?)\.\n")
_LABEL = re.compile(r"^- (\w+): ", re.MULTILINE)
REASK_MARK = "Your answer breaks these rules"


def _content(message: JsonObject) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def good_rows(system: str, user: str) -> list[JsonObject]:
    """One row per subtitle line, everything within the rules."""
    names = [n.strip() for n in _NAMES.search(system).group(1).split(",")]  # type: ignore[union-attr]
    people = names[:-2]
    strategies = _LABEL.findall(system.split("## support_strategy rules", 1)[1].split("When two labels", 1)[0])
    rows = []
    for _number, start, end, who, text in _LINE.findall(user):
        speaker = (who or "Therapist").split(" & ")[0]
        other = next(p for p in people if p != speaker) if speaker != "Therapist" else people[0]
        therapist = speaker == "Therapist"
        rows.append({
            "start_time": float(start), "end_time": float(end), "primary_speaker": speaker,
            "target": [other if therapist else "Therapist"], "dialogue_cleaned": text,
            "utterance_type": "" if therapist else "disclosure", "background_dialogue": [],
            "tone_of_voice": "calm", "body_posture": [{"person": speaker, "description": "seated upright"}],
            "facial_expressions": [], "self_directed_behavior": [], "interaction_behavior": [],
            "internal_emotion": [] if therapist else [
                {"person": speaker, "emotion_description": "tense", "intensity": 5}],
            "viewpoints_attitudes": [],
            "support_strategy": [{"provider": "Therapist", "target": [other], "strategy_type": strategies[0],
                                  "strategy_content": "follows the exchange"}] if therapist else [],
        })
    return rows


def break_rows(rows: list[JsonObject], kind: str) -> list[JsonObject]:
    rows = json.loads(json.dumps(rows))
    if kind == "missing_keys":
        for key in ("tone_of_voice", "facial_expressions"):
            rows[0].pop(key)
    elif kind == "uncovered_line":
        rows.pop(len(rows) // 2)
    elif kind == "hallucinated":  # a few rows of words nobody said, inside the first lines' times
        rows = [{**row, "dialogue_cleaned": f"Invented sentence number {n} about the weather."}
                for n, row in enumerate(rows[:8], start=1)]
    elif kind == "outside_cue":
        rows[0]["end_time"] = round(rows[0]["end_time"] + 0.6, 2)  # into the silence after the line
    elif kind == "self_target":
        rows[0]["target"] = [rows[0]["primary_speaker"]]
    elif kind == "unknown_label":
        therapist = next((r for r in rows if r["support_strategy"]), rows[0])
        therapist["support_strategy"] = [{"provider": "Therapist", "target": ["Couple"], "strategy_type": "hypnotise",
                                          "strategy_content": "x"}]
        rows[0]["utterance_type"] = "complaint" if rows[0]["primary_speaker"] != "Therapist" else ""
    else:
        raise ValueError(f"unknown broken kind {kind!r}; known: {', '.join(BROKEN_KINDS)}")
    return rows


def relation_answer(system: str, user: str, *, label: str | None = None) -> JsonObject:
    labels = _LABEL.findall(system.split("## Labels", 1)[1].split("## Rules", 1)[0])
    items = []
    for line in user.splitlines()[1:]:
        row = json.loads(line)
        if row["primary_speaker"] == "Therapist":
            index = row["row_index"]
            items.append({"row_index": index, "relation_pattern": label or labels[0],
                          "relation_pattern_reason": "the partners press and retreat in turn",
                          "relation_pattern_evidence_rows": list(range(max(1, index - 2), index + 1))})
    return {"relation_patterns": items}


class DraftScript:
    """A script for :func:`~rescue.testing.openai_server.serve`; records which kinds of request it saw."""

    def __init__(self, broken: Iterable[str] = (), *, fix_on_reask: bool = True, relation_label: str | None = None):
        self.broken = tuple(broken)
        for kind in self.broken:
            if kind not in BROKEN_KINDS + HOSTILE_KINDS:
                raise ValueError(f"unknown broken kind {kind!r}; known: {', '.join(BROKEN_KINDS + HOSTILE_KINDS)}")
        self.fix_on_reask = fix_on_reask
        self.relation_label = relation_label
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}

    def _count(self, kind: str) -> None:
        with self.lock:
            self.seen[kind] = self.seen.get(kind, 0) + 1

    def __call__(self, body: JsonObject) -> Reply:
        messages = body["messages"]
        system = _content(messages[0])
        reask = REASK_MARK in _content(messages[-1])
        user = _content(messages[1])
        if "relation_patterns" in system:
            self._count("relations-reask" if reask else "relations")
            return Reply.json(relation_answer(system, user, label=self.relation_label))
        self._count("rows-reask" if reask else "rows")
        rows = good_rows(system, user)
        if self.broken and (not reask or not self.fix_on_reask):
            if "not_json" in self.broken:
                return Reply.text("Here are the rows you asked for: rows = [ ... ]")
            if "big_number" in self.broken or "huge_float" in self.broken:
                number = "9" * 5000 if "big_number" in self.broken else "1e999"
                text = json.dumps({"rows": rows})
                return Reply.text(text.replace('"start_time": ', f'"start_time": {number}, "was": ', 1))
            if "lone_surrogate" in self.broken:
                rows[0]["dialogue_cleaned"] += "\ud800"
            for kind in (k for k in self.broken if k in BROKEN_KINDS):
                rows = break_rows(rows, kind)
        return Reply.json({"rows": rows})


def draft_script(*broken: str, fix_on_reask: bool = True, relation_label: str | None = None) -> DraftScript:
    return DraftScript(broken, fix_on_reask=fix_on_reask, relation_label=relation_label)
