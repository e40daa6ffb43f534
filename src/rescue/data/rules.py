"""The rulebook: every rule one row must keep, written once.

``rescue build`` holds a model's draft to these rules, the review tool holds every save, verify,
adjudication and export to them, and ``rescue validate`` reports them (``--strict`` applies them in full).
Each rule has an id, the fields it guards, a severity and a message:

- ``error``: never allowed (the paper forbids it, or the release format cannot hold it);
- ``warning``: a person may knowingly override it; the review tool asks for an explicit acknowledgement.

A ``lenient`` rule is newer than the release format. Plain ``rescue validate`` (and every command that loads
data) reports its breaches as warnings, so data annotated before the rule existed still loads; ``--strict``
and the review tool apply its severity. The real samples break none of the rules (tests/data/test_rules.py).

The checks read a row as a plain dict (the release's JSON), so the build can check a model's answer before
it is a :class:`~rescue.data.models.Row`; a part of the wrong type is skipped (the schema reports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict

from rescue.data.errors import Severity
from rescue.data.models import GROUP_LABELS, THERAPIST, Scenario
from rescue.data.taxonomy import INTENSITY_SCALE, UTTERANCE_TYPE_NAMES, relation_taxonomy, strategy_taxonomy


@dataclass(frozen=True)
class Rule:
    """One rule of a row: its id, the fields it guards, its severity and its wording for people."""

    id: str
    fields: str  # the field paths it guards; "[]" stands for any entry of a list
    severity: Severity
    message: str  # the rule itself, for people (docs, the review page)
    lenient: bool = False


class BreachView(TypedDict):
    """A breach as JSON (:meth:`Breach.as_dict`)."""

    rule: str
    field: str
    severity: Severity
    message: str
    key: str


@dataclass(frozen=True)
class Breach:
    """One rule broken at one field path of one row (``support_strategy[0].target``)."""

    rule: Rule
    field: str
    message: str

    @property
    def severity(self) -> Severity:
        """The severity of the broken rule."""
        return self.rule.severity

    @property
    def key(self) -> str:
        """What a person acknowledges: the rule at this field."""
        return f"{self.rule.id}@{self.field}"

    def as_dict(self) -> BreachView:
        """The breach as JSON: rule id, field, severity, message and the key a person acknowledges."""
        return {"rule": self.rule.id, "field": self.field, "severity": self.severity, "message": self.message,
                "key": self.key}


_NAMES = ("primary_speaker, target[], support_strategy[].target[], background_dialogue[].speaker, "
          "background_dialogue[].target[], internal_emotion[].person, viewpoints_attitudes[].source/target")
_CUE_NAMES = ("body_posture[].person, facial_expressions[].person, self_directed_behavior[].person, "
              "interaction_behavior[].initiator, interaction_behavior[].target[]")
_TARGETS = "target, support_strategy[].target, interaction_behavior[].target, background_dialogue[].target"
LISTS = ("background_dialogue", "body_posture", "facial_expressions", "self_directed_behavior", "interaction_behavior",
         "internal_emotion", "viewpoints_attitudes", "support_strategy")

CLOSED_SET = Rule("closed-set", _NAMES, "error",
                  "every name is a participant, Therapist or the scenario's group label (Couple or Family)")
CUE_CLOSED_SET = Rule("cue-closed-set", _CUE_NAMES, "warning",
                      "a person in a cue is in the cast (the release has cues of people outside it)")
LABEL = Rule("label", "utterance_type, relation_pattern, relation_cycle_state, support_strategy[].strategy_type",
             "error", "labels come from the scenario's taxonomy")
INTENSITY = Rule("intensity", "internal_emotion[].intensity", "error",
                 f"an intensity is a whole number {INTENSITY_SCALE[0]}-{INTENSITY_SCALE[1]} (or absent)")
SELF_TARGET = Rule("self-target", _TARGETS, "error",
                   "nobody targets themselves: not the speaker in the row's target, not Therapist in a support "
                   "strategy's target, not an initiator or background speaker in their own target", lenient=True)
SELF_VIEWPOINT = Rule("self-viewpoint", "viewpoints_attitudes[].target", "error",
                      "a viewpoint or attitude is held about someone else, never from a person to themselves",
                      lenient=True)
STRATEGY_ROLE = Rule("strategy-therapist-only", "support_strategy, support_strategy[].provider", "error",
                     "only a Therapist row carries a support strategy, and Therapist provides it", lenient=True)
GROUP_ALONE = Rule("group-target-alone", "support_strategy[].target", "error",
                   "in a couple session, Couple is the only item of a support strategy's target when it is one",
                   lenient=True)
BLANK_ENTRY = Rule("blank-entry", ", ".join(f"{name}[]" for name in LISTS), "error",
                   'a list entry holds something: no {"person": "", "description": ""}', lenient=True)
THERAPIST_UTTERANCE = Rule("therapist-utterance-type", "utterance_type", "error",
                           "a Therapist row has no utterance type (utterance types describe clients)", lenient=True)
CLIENT_UTTERANCE = Rule("client-utterance-type", "utterance_type", "warning",
                        "a client row has an utterance type", lenient=True)
EMPTY_TARGET = Rule("empty-target", _TARGETS, "warning", "a turn, strategy or act addresses someone", lenient=True)
EMPTY_TEXT = Rule("empty-text", "background_dialogue[].content, body_posture[].description, "
                  "facial_expressions[].description, self_directed_behavior[].description, "
                  "interaction_behavior[].description, internal_emotion[].emotion_description, "
                  "viewpoints_attitudes[].viewpoint", "warning", "a list entry says what was seen or said",
                  lenient=True)

RULES: tuple[Rule, ...] = (CLOSED_SET, CUE_CLOSED_SET, LABEL, INTENSITY, SELF_TARGET, SELF_VIEWPOINT, STRATEGY_ROLE,
                           GROUP_ALONE, BLANK_ENTRY, THERAPIST_UTTERANCE, CLIENT_UTTERANCE, EMPTY_TARGET, EMPTY_TEXT)
RULES_BY_ID = {rule.id: rule for rule in RULES}

# The part of each list entry that says what it is about (empty-text), and the parts that do not count when
# deciding whether an entry is blank (a strategy's provider has a default).
_TEXT_PART = {"background_dialogue": "content", "body_posture": "description", "facial_expressions": "description",
              "self_directed_behavior": "description", "interaction_behavior": "description",
              "internal_emotion": "emotion_description", "viewpoints_attitudes": "viewpoint"}
_NOT_CONTENT = frozenset({"provider"})


@dataclass(frozen=True)
class Cast:
    """The closed set of one sample and its scenario's label sets."""

    scenario: Scenario
    group: str
    people: frozenset[str]  # participants and Therapist
    names: frozenset[str]  # people and the group label
    described: str  # the closed set in words, for messages
    relations: frozenset[str]
    strategies: frozenset[str]


@lru_cache(maxsize=1024)
def _cast(scenario: Scenario, participants: tuple[str, ...]) -> Cast:
    group = GROUP_LABELS[scenario]
    people = frozenset(participants) | {THERAPIST}
    return Cast(scenario, group, people, people | {group},
                f"participants {', '.join(participants) or '(none)'}, {THERAPIST} or {group}",
                frozenset(relation_taxonomy(scenario).names), frozenset(strategy_taxonomy(scenario).names))


def cast_of(scenario: Scenario, participants: Sequence[str]) -> Cast:
    """The cast (people, therapist and group label) a row's names are checked against."""
    return _cast(scenario, tuple(participants))


def _entries(row: Mapping[str, Any], field: str) -> list[tuple[int, dict[str, Any]]]:
    value = row.get(field)
    return [(i, e) for i, e in enumerate(value) if isinstance(e, dict)] if isinstance(value, list) else []


def _names(value: Any) -> list[tuple[int, str]]:
    return [(j, n) for j, n in enumerate(value) if isinstance(n, str)] if isinstance(value, list) else []


def _blank(entry: dict[str, Any]) -> bool:
    return not any(
        (value.strip() if isinstance(value, str) else value not in (None, [], {}))
        for key, value in entry.items() if key not in _NOT_CONTENT
    )


def check_row(row: Mapping[str, Any], cast: Cast) -> list[Breach]:
    """Every rule ``row`` breaks, in field order."""
    check = _RowCheck(row, cast)
    for part in (check.speaker_and_target, check.utterance, check.blank_entries, check.background_dialogue,
                 check.cues, check.interactions, check.emotions, check.viewpoints, check.strategies,
                 check.relations):
        part()
    return check.found


class _RowCheck:
    """The breaches of one row, found part by part (each method one group of fields, in field order)."""

    def __init__(self, row: Mapping[str, Any], cast: Cast):
        self.row = row
        self.cast = cast
        self.found: list[Breach] = []
        self.add = self.found.append
        self.speaker = row.get("primary_speaker")
        # Each list field's entries, blank ones left out, read once by blank_entries (which check_row runs
        # before every part that calls filled()).
        self.kept: dict[str, list[tuple[int, dict[str, Any]]]] = {}

    def closed(self, value: Any, path: str, rule: Rule = CLOSED_SET) -> None:
        if isinstance(value, str) and value not in self.cast.names:
            self.add(Breach(rule, path, f"{value!r} is not one of {self.cast.described}"))

    def filled(self, field: str) -> list[tuple[int, dict[str, Any]]]:
        return self.kept.get(field, [])

    def speaker_and_target(self) -> None:
        row, speaker, add = self.row, self.speaker, self.add
        self.closed(speaker, "primary_speaker")
        target = _names(row.get("target"))
        for j, name in target:
            self.closed(name, f"target[{j}]")
        if isinstance(row.get("target"), list) and not row["target"]:
            add(Breach(EMPTY_TARGET, "target", "empty target"))
        if isinstance(speaker, str) and any(name == speaker for _, name in target):
            add(Breach(SELF_TARGET, "target", f"self-target: {speaker} is the speaker and a target"))

    def utterance(self) -> None:
        utterance, speaker, add = self.row.get("utterance_type"), self.speaker, self.add
        if not isinstance(utterance, str):
            return
        if utterance and utterance not in UTTERANCE_TYPE_NAMES:
            add(Breach(LABEL, "utterance_type", f"{utterance!r} is not an utterance type"))
        if speaker == THERAPIST and utterance:
            add(Breach(THERAPIST_UTTERANCE, "utterance_type", f'must be "" on a {THERAPIST} row (got {utterance!r})'))
        elif isinstance(speaker, str) and speaker != THERAPIST and not utterance:
            add(Breach(CLIENT_UTTERANCE, "utterance_type", "empty on a client row"))

    def blank_entries(self) -> None:
        for field in LISTS:
            kept = self.kept[field] = []
            for i, entry in _entries(self.row, field):
                if _blank(entry):
                    self.add(Breach(BLANK_ENTRY, f"{field}[{i}]",
                                    "a blank entry (every part empty): fill it in or remove it"))
                    continue
                kept.append((i, entry))
                if field in _TEXT_PART:
                    text = entry.get(_TEXT_PART[field])
                    if isinstance(text, str) and not text.strip():
                        self.add(Breach(EMPTY_TEXT, f"{field}[{i}].{_TEXT_PART[field]}", "empty"))

    def background_dialogue(self) -> None:
        for i, said in self.filled("background_dialogue"):
            self.closed(said.get("speaker"), f"background_dialogue[{i}].speaker")
            names = _names(said.get("target"))
            for j, name in names:
                self.closed(name, f"background_dialogue[{i}].target[{j}]")
            _targets(self.add, f"background_dialogue[{i}].target", said, said.get("speaker"), "speaker", names)

    def cues(self) -> None:
        for field in ("body_posture", "facial_expressions", "self_directed_behavior"):
            for i, cue in self.filled(field):
                self.closed(cue.get("person"), f"{field}[{i}].person", CUE_CLOSED_SET)

    def interactions(self) -> None:
        for i, act in self.filled("interaction_behavior"):
            self.closed(act.get("initiator"), f"interaction_behavior[{i}].initiator", CUE_CLOSED_SET)
            names = _names(act.get("target"))
            for j, name in names:
                self.closed(name, f"interaction_behavior[{i}].target[{j}]", CUE_CLOSED_SET)
            _targets(self.add, f"interaction_behavior[{i}].target", act, act.get("initiator"), "initiator", names)

    def emotions(self) -> None:
        low, high = INTENSITY_SCALE  # whole numbers: 7.0 reads as 7, 7.5 is an error
        for i, emotion in self.filled("internal_emotion"):
            self.closed(emotion.get("person"), f"internal_emotion[{i}].person")
            value = emotion.get("intensity")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if not low <= value <= high:
                self.add(Breach(INTENSITY, f"internal_emotion[{i}].intensity", f"{value} is outside {low}-{high}"))
            elif value != int(value):
                self.add(Breach(INTENSITY, f"internal_emotion[{i}].intensity",
                                f"{value} is not a whole number (the intensity scale is integer {low}-{high})"))

    def viewpoints(self) -> None:
        for i, view in self.filled("viewpoints_attitudes"):
            self.closed(view.get("source"), f"viewpoints_attitudes[{i}].source")
            self.closed(view.get("target"), f"viewpoints_attitudes[{i}].target")
            if isinstance(view.get("source"), str) and view.get("source") == view.get("target"):
                self.add(Breach(SELF_VIEWPOINT, f"viewpoints_attitudes[{i}].target",
                                f"self-viewpoint: from {view['source']} to {view['source']}"))

    def strategies(self) -> None:
        speaker, cast, add = self.speaker, self.cast, self.add
        moves = self.filled("support_strategy")
        if moves and isinstance(speaker, str) and speaker != THERAPIST:
            add(Breach(STRATEGY_ROLE, "support_strategy",
                       f"only {THERAPIST} rows carry a support strategy (this row's speaker is {speaker})"))
        for i, move in moves:
            kind = move.get("strategy_type")
            if isinstance(kind, str) and kind.strip() not in cast.strategies:
                add(Breach(LABEL, f"support_strategy[{i}].strategy_type", f"{kind!r} is not a {cast.scenario} support strategy"))
            provider = move.get("provider", THERAPIST)
            if isinstance(provider, str) and provider != THERAPIST:
                add(Breach(STRATEGY_ROLE, f"support_strategy[{i}].provider", f"must be {THERAPIST} (got {provider!r})"))
            names = _names(move.get("target"))
            for j, name in names:
                self.closed(name, f"support_strategy[{i}].target[{j}]")
            _targets(add, f"support_strategy[{i}].target", move, THERAPIST, "provider", names)
            if cast.scenario == "couple" and len(names) > 1 and any(n == cast.group for _, n in names):
                add(Breach(GROUP_ALONE, f"support_strategy[{i}].target", f"{cast.group} must be the only target item"))

    def relations(self) -> None:
        for name in ("relation_pattern", "relation_cycle_state"):
            label = self.row.get(name)
            if isinstance(label, str) and label and label.strip() not in self.cast.relations:
                self.add(Breach(LABEL, name, f"{label!r} is not a {self.cast.scenario} relation pattern"))


def _targets(add: Any, path: str, entry: dict[str, Any], source: Any, role: str, names: list[tuple[int, str]]) -> None:
    if isinstance(entry.get("target"), list) and not entry["target"]:
        add(Breach(EMPTY_TARGET, path, "empty target"))
    if isinstance(source, str) and any(name == source for _, name in names):
        add(Breach(SELF_TARGET, path, f"self-target: {source} is the {role} and a target"))


def severity_in(rule: Rule, strict: bool) -> Severity:
    """What ``rescue validate`` calls a breach: the rule's severity under ``--strict``; without it, a lenient
    rule's breaches are warnings."""
    return rule.severity if strict or not rule.lenient else "warning"
