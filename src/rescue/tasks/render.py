"""Rendering rows into prompt records, shared by every task (protocol §1.7-1.8).

A row becomes a compact JSON object; which annotated cues it shows depends on the mode. Gold-bearing
fields (internal emotion, viewpoints, strategy, relation labels, utterance type) are never rendered.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any, NotRequired, TypedDict

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


class RenderedBackground(TypedDict):
    """One background utterance of a rendered row (one with a speaker, a target and content)."""

    speaker: str
    target: list[str]
    content: str


class RenderedCue(TypedDict):
    """One body-posture, facial-expression or self-directed cue of a rendered row."""

    person: str
    description: str


class RenderedInteraction(TypedDict):
    """One interaction cue of a rendered row."""

    initiator: str
    target: list[str]
    description: str


class RenderedRow(TypedDict):
    """A row's prompt record (:func:`encode_row`, :func:`render_row`), keys in the order the prompt shows them.

    The cues are present exactly in the modes that show them; no gold-bearing field is ever a key."""

    row_index: int  # 1-based
    primary_speaker: str
    participants: NotRequired[list[str]]  # only where the caller gives them (VP's current turn)
    target: list[str]
    dialogue_cleaned: str
    background_dialogue: list[RenderedBackground]
    timestamp: str  # "start-end" in seconds, three decimals each
    tone_of_voice: NotRequired[str]  # the modes with audio cues
    body_posture: NotRequired[list[RenderedCue]]  # this and the next three: the modes with visual cues
    facial_expressions: NotRequired[list[RenderedCue]]
    self_directed_behavior: NotRequired[list[RenderedCue]]
    interaction_behavior: NotRequired[list[RenderedInteraction]]


def encode_row(row: Row, mode: str, *, participants: list[str] | None = None) -> str:
    """A row's prompt record (:class:`RenderedRow`, keys in its order) as compact JSON.

    Written directly rather than as a dict for the standard encoder: every row of every sample is encoded
    once per run and mode, and building the dict first cost as much as encoding it. Strings go through the
    standard encoder's own string function, so the bytes are those ``json.dumps(render_row(...),
    ensure_ascii=False, separators=(",", ":"))`` gives.
    """
    text = _encode_string
    # int.__repr__ is how the standard encoder writes an int; the timestamp's digits need no escaping.
    parts = ['{"row_index":', int.__repr__(row.row_index), ',"primary_speaker":', text(row.speaker)]
    if participants is not None:
        parts.append(',"participants":' + _encode(participants))
    parts += (',"target":', _strings(row.target), ',"dialogue_cleaned":', text(row.dialogue_cleaned))
    # Most rows have no background dialogue and most cue lists are empty: those cost one constant each.
    background = row.background_dialogue
    parts.append(_list(',"background_dialogue":', [
        '{"speaker":' + text(b.speaker) + ',"target":' + _strings(b.target) + ',"content":' + text(b.content) + "}"
        for b in background if b.speaker and b.target and b.content] if background else None))
    parts.append(f',"timestamp":"{row.start_time:.3f}-{row.end_time:.3f}"')
    if mode in _AUDIO_CUES:
        parts += (',"tone_of_voice":', text(row.tone_of_voice))
    if mode in _VISUAL_CUES:
        for key, cues in ((',"body_posture":', row.body_posture), (',"facial_expressions":', row.facial_expressions),
                          (',"self_directed_behavior":', row.self_directed_behavior)):
            parts.append(_list(key, [
                '{"person":' + text(c.person) + ',"description":' + text(c.description) + "}" for c in cues
            ] if cues else None))
        interactions = row.interaction_behavior
        parts.append(_list(',"interaction_behavior":', [
            '{"initiator":' + text(c.initiator) + ',"target":' + _strings(c.target) + ',"description":'
            + text(c.description) + "}" for c in interactions] if interactions else None))
    parts.append("}")
    return "".join(parts)


def _list(key: str, items: list[str] | None) -> str:
    """``key`` followed by the JSON list of the already encoded ``items``."""
    return key + "[" + ",".join(items) + "]" if items else key + "[]"


def _strings(values: list[str]) -> str:
    if len(values) == 1:
        return "[" + _encode_string(values[0]) + "]"
    return "[" + ",".join(map(_encode_string, values)) + "]"


def render_row(row: Row, mode: str, *, participants: list[str] | None = None) -> RenderedRow:
    """:func:`encode_row` as a dict (the record a prompt shows of the row)."""
    record: RenderedRow = json.loads(encode_row(row, mode, participants=participants))
    return record


class RawJSON:
    """Text that is already JSON, possibly in pieces; :func:`dumps` inserts it verbatim.

    Keeping the pieces (``"["``, the joined rows, ``"]"``) lets a prompt copy a long context once, into the
    prompt itself, instead of once per wrapping step."""

    __slots__ = ("parts",)

    def __init__(self, *parts: str):
        self.parts = parts

    @property
    def text(self) -> str:
        """The JSON text."""
        return "".join(self.parts)

    def __str__(self) -> str:
        return self.text


class RowCache:
    """Prompt JSON of rows, per sample and mode, encoded once and reused for as long as the cache lives.

    The owner decides that lifetime: the runner keeps one per run (a run has one mode; its tasks and models
    share it), during which samples do not change. Nothing is cached on the sample itself, so an edited
    sample (the review tool edits them) is never rendered from a stale copy unless someone keeps a cache
    across the edit. A sample's rows are encoded together when a prompt first needs one of them: with all
    prior rows as context (RPP) a run shows every row anyway.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple[int, str], tuple[Sample, list[str]]] = {}

    def rows(self, sample: Sample, mode: str) -> list[str]:
        """The encoded rows of ``sample`` in ``mode``, encoded once."""
        key = (id(sample), mode)
        hit = self._rows.get(key)
        if hit is None or hit[0] is not sample:  # the sample is held, so its id cannot be reused meanwhile
            hit = (sample, [encode_row(row, mode) for row in sample.rows])
            self._rows[key] = hit
        return hit[1]


class EncodedRows:
    """A sample's rows as prompt JSON for one mode, spliced into prompts as they are: from ``cache``, or
    without one each row encoded when first shown (once per object)."""

    def __init__(self, sample: Sample, mode: str, cache: RowCache | None = None):
        self._sample = sample
        self._mode = mode
        self._cached = cache is not None
        self._rows: list[str | None] = (cache.rows(sample, mode) if cache is not None  # type: ignore[assignment]
                                        else [None] * len(sample.rows))

    def _encoded(self, start: int, stop: int) -> list[str]:
        """The encoded rows at 0-based positions ``start:stop``."""
        rows = self._rows
        window = rows[start:stop]
        if not self._cached and None in window:
            sample_rows, mode = self._sample.rows, self._mode
            for position in range(start, stop):
                if rows[position] is None:
                    rows[position] = encode_row(sample_rows[position], mode)
            window = rows[start:stop]
        return window  # type: ignore[return-value]  # every entry is filled now

    def row(self, index: int) -> RawJSON:
        """``render_row`` of the row with 1-based ``index``."""
        return RawJSON(*self._encoded(index - 1, index))

    def context(self, current: int, k: int) -> RawJSON:
        """The JSON list of :func:`context_rows`."""
        window = context_window(current, k)
        return RawJSON("[", ",".join(self._encoded(window.start, window.stop)), "]")


def context_window(current: int, k: int) -> slice:
    """0-based slice of the rows strictly before 1-based row ``current``: none for k=0, all for k=-1, else the last k."""
    if k == 0 or current <= 1:
        return slice(0, 0)
    start = 1 if k < 0 else max(1, current - k)
    return slice(start - 1, current - 1)


def context_rows(sample: Sample, current: int, k: int) -> list[Row]:
    """Rows strictly before 1-based row ``current``: none for k=0, all for k=-1, else the last k."""
    return sample.rows[context_window(current, k)]


# The standard (C) encoder, built once: json.dumps builds one per call when given options.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_encode = _ENCODER.encode
# What that encoder writes every string with (ensure_ascii=False), called directly for the items' ids.
_encode_string = encode_basestring


class _Spliced(Exception):
    """A RawJSON fragment met by the standard encoder: the value needs :func:`write_json`."""


def _refuse_fragment(obj: Any) -> Any:
    if isinstance(obj, RawJSON):
        raise _Spliced
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_encode_plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_refuse_fragment).encode
# ('{"key":', ',"key":') of the field names prompts use, encoded once; bounded, as dumps also sees other keys.
_KEYS: dict[str, tuple[str, str]] = {}


def _key(key: Any) -> tuple[str, str]:
    if not isinstance(key, str):
        raise TypeError(f"keys of a JSON object holding RawJSON must be str, not {type(key).__name__}")
    encoded = _encode(key) + ":"
    pair = ("{" + encoded, "," + encoded)
    if len(_KEYS) < 4096:
        _KEYS[key] = pair
    return pair


def write_json(value: Any, out: list[str]) -> None:
    """Append compact JSON of ``value`` to ``out`` in pieces, :class:`RawJSON` fragments as they are.

    The bytes are those of ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` with each
    fragment in place of its value; leaves go through the standard encoder, so strings and numbers are
    written exactly as it writes them. Prompt items (objects of strings and fragments) are its hot path.
    """
    kind = type(value)
    if kind is RawJSON:
        out += value.parts
    elif kind is str:
        out.append(_encode_string(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        first = True
        for key, item in value.items():
            pair = _KEYS.get(key) or _key(key)
            out.append(pair[0] if first else pair[1])
            first = False
            if type(item) is RawJSON:
                out += item.parts
            else:
                write_json(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        opening = "["
        for item in value:
            out.append(opening)
            opening = ","
            write_json(item, out)
        out.append("]")
    else:
        out.append(_encode(value))


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept, splicing in :class:`RawJSON` fragments as they are.

    Plain values go through the standard (C) encoder in one call; a value holding fragments is written
    by :func:`write_json`, so the rows inside a prompt are encoded once, not once per prompt.
    """
    try:
        return _encode_plain(value)
    except _Spliced:
        out: list[str] = []
        write_json(value, out)
        return "".join(out)
