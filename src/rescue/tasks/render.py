"""Rendering rows into prompt records, shared by every task (protocol §1.7-1.8).

A row becomes a compact JSON object; which annotated cues it shows depends on the mode. Gold-bearing
fields (internal emotion, viewpoints, strategy, relation labels, utterance type) are never rendered.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rescue.data.models import Row, Sample

MODE_EVIDENCE: dict[str, str] = {
    "dialogue": "Use only speakers, targets, timestamps, dialogue and background dialogue.",
    "audio": "Use the dialogue fields plus tone of voice; no visual evidence is available.",
    "visual": "Use the dialogue fields plus body posture, facial expressions, self-directed and interaction "
    "behaviour; no audio evidence is available.",
    "audiovisual": "Use the dialogue fields plus tone of voice and all visual cues.",
    "video": "Use the attached video of the shown rows (frames or a clip, in time order; it ends where the shown "
    "rows end) together with speakers, targets, timestamps, dialogue and background dialogue.",
    "video+cues": "Use the attached video of the shown rows (frames or a clip, in time order; it ends where the "
    "shown rows end) together with the dialogue fields, tone of voice and all annotated visual cues.",
}
# The annotated cues each mode adds to a row's dialogue fields.
_AUDIO_CUES = ("audio", "audiovisual", "video+cues")
_VISUAL_CUES = ("visual", "audiovisual", "video+cues")


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
    if mode in _AUDIO_CUES:
        record["tone_of_voice"] = row.tone_of_voice
    if mode in _VISUAL_CUES:
        for name in ("body_posture", "facial_expressions", "self_directed_behavior"):
            record[name] = [{"person": c.person, "description": c.description} for c in getattr(row, name)]
        record["interaction_behavior"] = [
            {"initiator": c.initiator, "target": list(c.target), "description": c.description}
            for c in row.interaction_behavior
        ]
    return record


class RawJSON:
    """Text that is already JSON; :func:`dumps` inserts it verbatim."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


class EncodedRows:
    """A sample's rows as prompt JSON for one mode, encoded once per sample and mode and then spliced."""

    def __init__(self, sample: Sample, mode: str):
        cache = sample._rendered_rows
        if mode not in cache:
            cache[mode] = [dumps(render_row(row, mode)) for row in sample.rows]
        self._rows = cache[mode]

    def row(self, index: int) -> RawJSON:
        """``render_row`` of the row with 1-based ``index``."""
        return RawJSON(self._rows[index - 1])

    def context(self, current: int, k: int) -> RawJSON:
        """The JSON list of :func:`context_rows`."""
        return RawJSON("[" + ",".join(self._rows[context_window(current, k)]) + "]")


def context_window(current: int, k: int) -> slice:
    """0-based slice of the rows strictly before 1-based row ``current``: none for k=0, all for k=-1, else the last k."""
    if k == 0 or current <= 1:
        return slice(0, 0)
    start = 1 if k < 0 else max(1, current - k)
    return slice(start - 1, current - 1)


def context_rows(sample: Sample, current: int, k: int) -> list[Row]:
    """Rows strictly before 1-based row ``current``: none for k=0, all for k=-1, else the last k."""
    return sample.rows[context_window(current, k)]


# A private-use character marks where a RawJSON fragment goes; it never occurs in the transcripts.
_MARK = "\ue000"
_SLOT = re.compile(f'"{_MARK}(\\d+){_MARK}"')


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept, splicing in :class:`RawJSON` fragments as they are.

    The standard (C) encoder does the work; each fragment is encoded as a numbered placeholder string
    and swapped in afterwards, so the rows inside a prompt are encoded once, not once per prompt.
    """
    fragments: list[str] = []

    def placeholder(obj: Any) -> str:
        if isinstance(obj, RawJSON):
            fragments.append(obj.text)
            return f"{_MARK}{len(fragments) - 1}{_MARK}"
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=placeholder)
    return _SLOT.sub(lambda match: fragments[int(match.group(1))], text) if fragments else text
