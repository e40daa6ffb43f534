"""pydantic models of the RESCUE-Bench release format, exactly as the release ships it.

Unknown fields are kept (``extra="allow"``) so that a sample read and written again loses nothing.
Field types mirror the real data: the cue fields are lists of ``{person, description}`` objects,
not the strings the authors' README shows.
"""

from __future__ import annotations

from typing import Any, Literal

import json
import sys
import zlib

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

Scenario = Literal["couple", "family"]
THERAPIST = "Therapist"
GROUP_LABELS: dict[str, str] = {"couple": "Couple", "family": "Family"}
NON_PERSON_LABELS = frozenset({THERAPIST, "Couple", "Family"})
# A row of the release format as a JSON object (a draft's, a copy's, one the builder makes): the fields of
# :class:`Row` and any other the record carries. Open by design: fields are edited and checked by name, and a
# field the format does not know is kept, never dropped.
RowValues = dict[str, Any]


class _SharedFields(set[str]):
    """The names of the fields a model was given, one set shared by every model given the same names. pydantic
    keeps such a set per model (2 KB for a row); a release has about ten distinct ones among its tens of
    thousands of rows and cues, and at ten times the release's size these copies alone held 250 MB. A shared
    set is never changed in place: a model that is assigned a field takes its own copy first."""


_SHARED_FIELDS: dict[frozenset[str], _SharedFields] = {}


def share_field_sets(value: object, *, deep: bool = True) -> None:
    """Every model in ``value`` (a model, or a list of them, nested; ``deep=False``: that model alone) given its
    shared set of field names."""
    if isinstance(value, list):
        for item in value:
            share_field_sets(item)
    elif isinstance(value, SharedFieldSets):
        names = value.__pydantic_fields_set__
        if type(names) is not _SharedFields:
            key = frozenset(names)
            shared = _SHARED_FIELDS.get(key)
            if shared is None:
                shared = _SHARED_FIELDS.setdefault(key, _SharedFields(key))
            object.__setattr__(value, "__pydantic_fields_set__", shared)
        for item in value.__dict__.values() if deep else ():
            if isinstance(item, (list, SharedFieldSets)):
                share_field_sets(item)


class _NoExtra(dict[str, Any]):
    """The empty dict of extra fields, one shared by every model read without any (:func:`compact_sample`): each
    model of an open class holds one, 64 bytes, a tenth of the ~150 models of an average sample. Never changed in
    place: a model that is given an extra field takes its own dict first."""


_NO_EXTRA = _NoExtra()
# Strings up to this length are the names, labels and short descriptions that a release repeats thousands of times
# (``Therapist`` alone 77 times a sample): one copy each. Longer ones (the dialogue) are each a sample's own.
_SHORT = 40


def _short(value: object) -> object:
    return sys.intern(value) if type(value) is str and len(value) <= _SHORT else value


def compact_sample(value: object) -> None:
    """What :func:`share_field_sets` does, and a loaded sample held lighter (a run holds every sample until it
    ends): short strings held once (:data:`_SHORT`) and one shared empty dict of extra fields. Neither changes a
    value, only which equal object holds it."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (list, SharedFieldSets)):
                compact_sample(item)
            else:
                value[index] = _short(item)
    elif isinstance(value, SharedFieldSets):
        share_field_sets(value, deep=False)
        if type(value.__pydantic_extra__) is dict and not value.__pydantic_extra__:
            object.__setattr__(value, "__pydantic_extra__", _NO_EXTRA)
        fields = value.__dict__
        for key, item in fields.items():  # values replaced in place: the keys do not change
            if isinstance(item, (list, SharedFieldSets)):
                compact_sample(item)
            else:
                fields[key] = _short(item)


class SharedFieldSets(BaseModel):
    """A model whose set of given field names may be shared with others (:func:`share_field_sets`), and whose empty
    dict of extra fields may be too (:func:`compact_sample`)."""

    def __setattr__(self, name: str, value: object) -> None:
        if type(self.__pydantic_fields_set__) is _SharedFields:  # shared with other models: copied, never changed
            object.__setattr__(self, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        if type(self.__pydantic_extra__) is _NoExtra:
            object.__setattr__(self, "__pydantic_extra__", {})
        super().__setattr__(name, value)


class _Open(SharedFieldSets):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class PersonCue(_Open):
    """One observed cue (posture, face, self-directed behaviour) of one person."""

    person: str
    description: str


class InteractionCue(_Open):
    """One interaction behaviour in a turn: who initiates it, towards whom, and what it is."""

    initiator: str
    target: list[str] = Field(default_factory=list)
    description: str


class Emotion(_Open):
    """One person's internal emotion in a turn, with its intensity (0-10) when annotated."""

    person: str
    emotion_description: str
    intensity: int | float | None = None


class Viewpoint(_Open):
    """A directed viewpoint in a turn: what ``source`` thinks of ``target``, and the attitude."""

    source: str
    target: str
    viewpoint: str
    attitude: str = ""


class Strategy(_Open):
    """The therapist's support strategy in a turn: its type, whom it addresses, and what was done."""

    provider: str = THERAPIST
    strategy_type: str
    target: list[str] = Field(default_factory=list)
    strategy_content: str = ""


class BackgroundUtterance(_Open):
    """Speech behind the turn's main one: who says what to whom."""

    speaker: str
    target: list[str] = Field(default_factory=list)
    content: str


class Row(_Open):
    """One annotated turn."""

    row_index: int
    start_time: float
    end_time: float
    primary_speaker: str
    target: list[str] = Field(default_factory=list)
    dialogue_cleaned: str = ""
    utterance_type: str = ""
    background_dialogue: list[BackgroundUtterance] = Field(default_factory=list)
    tone_of_voice: str = ""
    body_posture: list[PersonCue] = Field(default_factory=list)
    facial_expressions: list[PersonCue] = Field(default_factory=list)
    self_directed_behavior: list[PersonCue] = Field(default_factory=list)
    interaction_behavior: list[InteractionCue] = Field(default_factory=list)
    internal_emotion: list[Emotion] = Field(default_factory=list)
    viewpoints_attitudes: list[Viewpoint] = Field(default_factory=list)
    support_strategy: list[Strategy] = Field(default_factory=list)
    relation_cycle_state: str | None = None
    relation_cycle_reason: str | None = None
    relation_cycle_evidence_rows: list[int] | None = None
    relation_pattern: str | None = None
    relation_pattern_reason: str | None = None
    relation_pattern_evidence_rows: list[int] | None = None

    @property
    def speaker(self) -> str:
        """The primary speaker's name, without surrounding spaces."""
        return self.primary_speaker.strip()

    @property
    def is_therapist(self) -> bool:
        """Whether the therapist speaks this turn."""
        return self.speaker == THERAPIST


class Sample(_Open):
    """One clip of a therapy session, the unit of the release (one JSONL line)."""

    sample_id: str
    scenario: Scenario
    participants: list[str] = Field(default_factory=list)
    source_file: str = ""
    rows: list[Row]

    # Where the sample was read from, for error messages; never serialised.
    origin_file: str = Field(default="", exclude=True)
    origin_line: int = Field(default=0, exclude=True)
    # The record as read (its JSON text), so an export writes it as the release holds it: a dump of the model
    # would add the optional fields the record lacks (null ``relation_cycle_*``) and respell numbers (3 -> 3.0).
    # Kept zlib-compressed (level 1): a fifth of the text's size, about 0.3 ms a sample to compress.
    _release_text: bytes | None = PrivateAttr(default=None)

    def release_json(self) -> str:
        """The sample as one line of the release: the record exactly as it was read (same keys, order and
        spelling), or, for a sample made in code, its fields as set (none added)."""
        if self._release_text is not None:
            return zlib.decompress(self._release_text).decode("utf-8")
        return json.dumps(self.model_dump(mode="json", exclude_unset=True), ensure_ascii=False)

    def keep_release_text(self, text: str) -> None:
        """Remember the record's JSON text as read (the loader calls it; :meth:`release_json` returns it)."""
        self._release_text = zlib.compress(text.encode("utf-8"), 1)

    @property
    def group_label(self) -> str:
        """The name the group goes by in targets (``Couple`` or ``Family``)."""
        return GROUP_LABELS[self.scenario]

    @property
    def duration_minutes(self) -> float:
        """Clip length: the largest end_time (clips start at 0), which reproduces the paper's Table 3."""
        return max((r.end_time for r in self.rows), default=0.0) / 60.0

    def row(self, index: int) -> Row:
        """The row with 1-based ``row_index`` ``index`` (rows are stored in order)."""
        return self.rows[index - 1]
