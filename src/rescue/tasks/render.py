"""Rendering rows into prompt records, shared by every task (protocol §1.7-1.8).

A row becomes a compact JSON object; which annotated cues it shows depends on the mode. Gold-bearing
fields (internal emotion, viewpoints, strategy, relation labels, utterance type) are never rendered.
"""

from __future__ import annotations

import json
from typing import Any

from rescue.data.models import Row, Sample

MODE_EVIDENCE: dict[str, str] = {
    "dialogue": "Use only speakers, targets, timestamps, dialogue and background dialogue.",
    "audio": "Use the dialogue fields plus tone of voice; no visual evidence is available.",
    "visual": "Use the dialogue fields plus body posture, facial expressions, self-directed and interaction "
    "behaviour; no audio evidence is available.",
    "audiovisual": "Use the dialogue fields plus tone of voice and all visual cues.",
}


def render_row(row: Row, mode: str, *, participants: list[str] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"row_index": row.row_index, "primary_speaker": row.speaker}
    if participants is not None:
        record["participants"] = participants
    record["target"] = list(row.target)
    record["dialogue_cleaned"] = row.dialogue_cleaned
    record["background_dialogue"] = [
        {"speaker": b.speaker, "target": list(b.target), "content": b.content}
        for b in row.background_dialogue
        if b.speaker and b.target and b.content
    ]
    record["timestamp"] = f"{row.start_time:.3f}-{row.end_time:.3f}"
    if mode in ("audio", "audiovisual"):
        record["tone_of_voice"] = row.tone_of_voice
    if mode in ("visual", "audiovisual"):
        for name in ("body_posture", "facial_expressions", "self_directed_behavior"):
            record[name] = [{"person": c.person, "description": c.description} for c in getattr(row, name)]
        record["interaction_behavior"] = [
            {"initiator": c.initiator, "target": list(c.target), "description": c.description}
            for c in row.interaction_behavior
        ]
    return record


def context_rows(sample: Sample, current: int, k: int) -> list[Row]:
    """Rows strictly before 1-based row ``current``: none for k=0, all for k=-1, else the last k."""
    if k == 0 or current <= 1:
        return []
    start = 1 if k < 0 else max(1, current - k)
    return sample.rows[start - 1 : current - 1]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
