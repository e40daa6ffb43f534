"""pydantic models of the RESCUE-Bench release format, exactly as the release ships it.

Unknown fields are kept (``extra="allow"``) so that a sample read and written again loses nothing.
Field types mirror the real data: the cue fields are lists of ``{person, description}`` objects,
not the strings the authors' README shows.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import json
import sys
import zlib

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

Scenario = Literal["couple", "family"]
THERAPIST = "Therapist"
GROUP_LABELS: dict[str, str] = {"couple": "Couple", "family": "Family"}
NON_PERSON_LABELS = frozenset({THERAPIST, "Couple", "Family"})
# A row of the release format as a JSON object (a draft's, a copy's, one the builder makes): the fields of
# :class:`Row` and any other the record carries. Open by design: fields are edited and checked by name, and a
# field the format does not know is kept, never dropped.
RowValues = dict[str, Any]


# Strings up to this length are the names, labels and short descriptions that a release repeats thousands of times
# (``Therapist`` alone 77 times a sample): each is held once, as :func:`sys.intern` holds it, however many rows
# name it (a run holds every sample until it ends). Longer ones (the dialogue) are each a row's own.
_SHORT = 40


def _held_once(value: str) -> str:
    return sys.intern(value) if len(value) <= _SHORT else value


# A string field of the release: validated as ``str``, then held once when short (the value is unchanged).
Text = Annotated[str, AfterValidator(_held_once)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# One set of given field names per distinct set, shared by every row or cue given those names (a release has
# about ten among its tens of thousands of rows and cues; a row's own set is its largest part after its text).
_FIELD_SETS: dict[frozenset[str], set[str]] = {}


class _Frozen(_Open):
    """A row or cue: read-only once made (``model_copy(update=...)`` makes a changed copy), so that a loaded
    sample's models given the same field names can share one set of them (:func:`share_field_names`)."""

    model_config = ConfigDict(frozen=True)


def _shared_names(model: BaseModel) -> set[str]:
    names = model.model_fields_set
    shared = _FIELD_SETS.get(frozenset(names))
    if shared is None:
        shared = _FIELD_SETS.setdefault(frozenset(names), set(names))
    return shared


_M = TypeVar("_M", bound=_Frozen)


def _holds_models(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, _Frozen) for item in value)


def _rebuilt(model: _M) -> _M:
    values = {name: [_rebuilt(item) for item in value] if _holds_models(value) else value
              for name, value in model}  # fields, then extra fields
    made = type(model).model_construct(_shared_names(model), **values)
    extra = made.model_extra
    if extra is not None and not extra:
        # model_construct keeps its keyword dict, emptied of the fields, as the extra fields: still sized for
        # every field. Cleared, the same empty dict holds no table.
        extra.clear()
    return made


def share_field_names(sample: Sample) -> None:
    """The rows and cues of a validated ``sample`` made again, equal, each with the one shared set of the names it
    was given (pydantic's ``model_construct`` keeps the ``_fields_set`` it is given; rows and cues are frozen, so
    no model can change a set others share). The loader calls it: a run holds every sample until it ends."""
    sample.rows = [_rebuilt(row) for row in sample.rows]


class PersonCue(_Frozen):
    """One observed cue (posture, face, self-directed behaviour) of one person."""

    person: Text
    description: Text


class InteractionCue(_Frozen):
    """One interaction behaviour in a turn: who initiates it, towards whom, and what it is."""

    initiator: Text
    target: list[Text] = Field(default_factory=list)
    description: Text


class Emotion(_Frozen):
    """One person's internal emotion in a turn, with its intensity (0-10) when annotated."""

    person: Text
    emotion_description: Text
    intensity: int | float | None = None


class Viewpoint(_Frozen):
    """A directed viewpoint in a turn: what ``source`` thinks of ``target``, and the attitude."""

    source: Text
    target: Text
    viewpoint: Text
    attitude: Text = ""


class Strategy(_Frozen):
    """The therapist's support strategy in a turn: its type, whom it addresses, and what was done."""

    provider: Text = THERAPIST
    strategy_type: Text
    target: list[Text] = Field(default_factory=list)
    strategy_content: Text = ""


class BackgroundUtterance(_Frozen):
    """Speech behind the turn's main one: who says what to whom."""

    speaker: Text
    target: list[Text] = Field(default_factory=list)
    content: Text


class Row(_Frozen):
    """One annotated turn."""

    row_index: int
    start_time: float
    end_time: float
    primary_speaker: Text
    target: list[Text] = Field(default_factory=list)
    dialogue_cleaned: Text = ""
    utterance_type: Text = ""
    background_dialogue: list[BackgroundUtterance] = Field(default_factory=list)
    tone_of_voice: Text = ""
    body_posture: list[PersonCue] = Field(default_factory=list)
    facial_expressions: list[PersonCue] = Field(default_factory=list)
    self_directed_behavior: list[PersonCue] = Field(default_factory=list)
    interaction_behavior: list[InteractionCue] = Field(default_factory=list)
    internal_emotion: list[Emotion] = Field(default_factory=list)
    viewpoints_attitudes: list[Viewpoint] = Field(default_factory=list)
    support_strategy: list[Strategy] = Field(default_factory=list)
    relation_cycle_state: Text | None = None
    relation_cycle_reason: Text | None = None
    relation_cycle_evidence_rows: list[int] | None = None
    relation_pattern: Text | None = None
    relation_pattern_reason: Text | None = None
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

    sample_id: Text
    scenario: Scenario
    participants: list[Text] = Field(default_factory=list)
    source_file: Text = ""
    rows: list[Row]

    # Where the sample was read from, for error messages; never serialised.
    origin_file: str = Field(default="", exclude=True)
    origin_line: int = Field(default=0, exclude=True)
    # The record as read (its JSON text), so an export writes it as the release holds it: a dump of the model
    # would add the optional fields the record lacks (null ``relation_cycle_*``) and respell numbers (3 -> 3.0).
    # Kept zlib-compressed (level 1: most of the saving for little CPU; benchmarks/README.md).
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
