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


class RowCache:
    """Prompt JSON of rows, per sample and mode, encoded once and reused for as long as the cache lives.

    The owner decides that lifetime: the runner keeps one per task and model for a run, during which
    samples do not change. Nothing is cached on the sample itself, so an edited sample (the review tool
    edits them) is never rendered from a stale copy unless someone keeps a cache across the edit.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple[int, str], tuple[Sample, list[str | None]]] = {}

    def rows(self, sample: Sample, mode: str) -> list[str | None]:
        key = (id(sample), mode)
        hit = self._rows.get(key)
        if hit is None or hit[0] is not sample:  # the sample is held, so its id cannot be reused meanwhile
            hit = (sample, [None] * len(sample.rows))
            self._rows[key] = hit
        return hit[1]


class EncodedRows:
    """A sample's rows as prompt JSON for one mode: each row encoded once (per ``cache``, or per object
    when there is none) and spliced into prompts as it is."""

    def __init__(self, sample: Sample, mode: str, cache: RowCache | None = None):
        self._sample = sample
        self._mode = mode
        self._rows: list[str | None] = cache.rows(sample, mode) if cache is not None else [None] * len(sample.rows)

    def _encoded(self, position: int) -> str:
        text = self._rows[position]
        if text is None:
            text = dumps(render_row(self._sample.rows[position], self._mode))
            self._rows[position] = text
        return text

    def row(self, index: int) -> RawJSON:
        """``render_row`` of the row with 1-based ``index``."""
        return RawJSON(self._encoded(index - 1))

    def context(self, current: int, k: int) -> RawJSON:
        """The JSON list of :func:`context_rows`."""
        window = context_window(current, k)
        return RawJSON("[" + ",".join(self._encoded(p) for p in range(window.start, window.stop)) + "]")


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
