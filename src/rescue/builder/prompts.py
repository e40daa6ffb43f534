"""The pre-annotation prompts, in our own words, following the structure of the authors' prompts
(paper §7.3): objective and JSON-only schema, hard output rules, the closed entity set, segmentation,
subtitle integrity, coverage and timing, target resolution, field definitions, strategy labels with
their precedence, extra constraints, a final self-check, and then the subtitle text.

Every label, definition and precedence comes from :mod:`rescue.data.taxonomy`; nothing is copied here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rescue.data.models import GROUP_LABELS, THERAPIST, Scenario
from rescue.data.taxonomy import (
    UTTERANCE_TYPES,
    label_block,
    relation_taxonomy,
    strategy_precedence,
    strategy_taxonomy,
)
from rescue.media import Cue

# The 15 keys of a row, in the order of the paper's schema.
ROW_KEYS: tuple[str, ...] = (
    "start_time", "end_time", "primary_speaker", "target", "dialogue_cleaned", "utterance_type",
    "background_dialogue", "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior",
    "interaction_behavior", "internal_emotion", "viewpoints_attitudes", "support_strategy",
)
MUST_SCAN = ("facial_expressions", "self_directed_behavior", "interaction_behavior", "internal_emotion",
             "viewpoints_attitudes", "support_strategy")
RELATION_KEYS = ("row_index", "relation_pattern", "relation_pattern_reason", "relation_pattern_evidence_rows")

_ROLE = "You are a senior clinical interaction analyst and a careful annotator of multimodal therapy transcripts."

_SCHEMA_EXAMPLE = {
    "rows": [{
        "start_time": 12.4, "end_time": 17.9, "primary_speaker": "<name>", "target": ["<name>"],
        "dialogue_cleaned": "<the subtitle words of this row>", "utterance_type": "<label or \"\" for Therapist>",
        "background_dialogue": [{"speaker": "<name>", "target": ["<name>"], "content": "<words>"}],
        "tone_of_voice": "<short description>",
        "body_posture": [{"person": "<name>", "description": "<what is seen>"}],
        "facial_expressions": [{"person": "<name>", "description": "<what is seen>"}],
        "self_directed_behavior": [{"person": "<name>", "description": "<what is seen>"}],
        "interaction_behavior": [{"initiator": "<name>", "target": ["<name>"], "description": "<what is seen>"}],
        "internal_emotion": [{"person": "<name>", "emotion_description": "<inferred feeling>", "intensity": 6}],
        "viewpoints_attitudes": [{"source": "<name>", "target": "<one name>", "viewpoint": "<belief>",
                                  "attitude": "<stance>"}],
        "support_strategy": [{"provider": THERAPIST, "target": ["<name>"], "strategy_type": "<label>",
                              "strategy_content": "<what the therapist does and why>"}],
    }]
}


def entity_set(scenario: Scenario, participants: Sequence[str]) -> list[str]:
    """The names a row may use: the participants, the therapist and the group label."""
    return [*participants, THERAPIST, GROUP_LABELS[scenario]]


def annotation_system_prompt(scenario: Scenario, participants: Sequence[str]) -> str:
    """The pre-annotation system prompt for a segment of ``scenario`` with these participants."""
    group = GROUP_LABELS[scenario]
    people = ", ".join(participants)
    names = ", ".join(entity_set(scenario, participants))
    strategies = strategy_taxonomy(scenario)
    others = sorted({n for s in ("couple", "family") for n in strategy_taxonomy(s).names} - set(strategies.names))
    precedence = "; ".join(f"{a} over {b}" for a, b in strategy_precedence(scenario))
    utterances = label_block(UTTERANCE_TYPES, rules="none")
    sections = [
        _ROLE,
        ("## Objective\n"
        f"Annotate a {scenario} therapy video segment row by row from the video and its subtitles. The subtitles "
        "are the ground truth for what was said and when; audio and video are the evidence for tone, posture, "
        "faces, behaviour, emotion, stance and the therapist's intervention. Answer with one JSON object "
        f"{{\"rows\": [...]}} whose rows have exactly these {len(ROW_KEYS)} keys, in this order: "
        f"{', '.join(ROW_KEYS)}. Shape:\n{json.dumps(_SCHEMA_EXAMPLE, ensure_ascii=False)}"),
        ("## Hard output rules\n"
        "- Valid JSON only: no code fences, no comments, no text before or after the object.\n"
        "- Every row has every key above: none added, renamed or left out.\n"
        "- An empty list is []; never write null, None, N/A or \"unknown\".\n"
        "- No record has an empty source, person, initiator, speaker or target."),
        ("## Entity naming rules\n"
        f"- The only names allowed anywhere are: {names}.\n"
        f"- {people} are the people on screen; the therapist is always \"{THERAPIST}\", never a personal name; "
        f"\"{group}\" means the whole {scenario} as one unit.\n"
        "- People who are only talked about (off screen) and placeholders (Speaker 1, Partner, Unknown) are never "
        "used.\n"
        "- Nobody is their own target: primary_speaker never appears in target, an initiator never in its own "
        "target, a source never equals its target.\n"
        f"- support_strategy targets never include \"{THERAPIST}\""
        + (f"; if \"{group}\" is a target it is the only item." if scenario == "couple" else ".")),
        ("## Segmentation rules\n"
        "- A row is one unit of interaction. Start a new row whenever the speaker, the addressee (target), the "
        "interactional function, the emotional or relational meaning, or a salient nonverbal behaviour changes.\n"
        "- Follow the interaction, not the subtitle lines: one subtitle line may become several rows (a speaker "
        "turns from the therapist to the partner, or moves from explaining to accusing), and consecutive lines "
        "of one speaker to one target with one function may form one row.\n"
        "- When a speaker addresses different targets in turn, split the rows; never merge speech across targets."),
        ("## Subtitle integrity rules\n"
        "- dialogue_cleaned holds the subtitle words of the row, in order, faithfully: no invented words, no "
        "paraphrase, no summary, no translation. Speaker prefixes may be removed; names spoken aloud stay.\n"
        "- Speech of others heard during the row goes to background_dialogue, also verbatim."),
        ("## Subtitle coverage and timing rules\n"
        "- Times are seconds from the start of this clip, as the numbered lines below give them; use them "
        "exactly (a line shown as 100.0 starts at 100.0, never at 40.0).\n"
        "- Every subtitle line below appears in some row's dialogue_cleaned; the rows reach the last line.\n"
        "- A row starts and ends inside the lines it quotes: start_time is not before the start of its first "
        "line and end_time not after the end of its last line. end_time is greater than start_time.\n"
        "- Never move words into a silence or into another speaker's line, never invent timing windows, and "
        "never run past the clip's end."),
        ("## Target resolution rules (in priority order)\n"
        "1. Whom the speaker is directly answering.\n2. Whom the speaker directly addresses (name, \"you\").\n"
        "3. The partner of the ongoing exchange.\n4. Gaze and body orientation.\n"
        f"5. \"{group}\" only when the words are truly meant for everyone.\n"
        f"Speaking to the therapist about someone else gives target [\"{THERAPIST}\"]."),
        ("## Field definitions\n"
        "- primary_speaker: who speaks the row. target: whom the row is addressed to (non-empty list).\n"
        f"- utterance_type: for client rows one of the labels below; for {THERAPIST} rows always \"\".\n"
        f"{utterances}\n"
        "- tone_of_voice: how the words sound (pace, loudness, warmth), a short phrase.\n"
        "- body_posture, facial_expressions, self_directed_behavior (touching oneself, fidgeting, wiping "
        "tears): what is visible, per person.\n"
        "- interaction_behavior: visible acts toward others (gaze, reaching out, turning away, interrupting).\n"
        "- internal_emotion: the feeling the evidence supports, per person, intensity 0 (none) to 10 (extreme).\n"
        "- viewpoints_attitudes: a belief one person voices about another (target is one name) and the stance.\n"
        "- support_strategy: only on Therapist rows, provider \"Therapist\".\n"
        "Sparse fields: most rows leave some lists empty, but these six must be considered on every row and "
        f"filled whenever there is evidence: {', '.join(MUST_SCAN)}."),
        (f"## support_strategy rules ({scenario})\n"
        "Use one of these labels (the main clinical function of the turn, not its surface wording):\n"
        f"{label_block(strategies.labels, rules='inline')}\n"
        f"When two labels fit, the first of each pair wins: {precedence}.\n"
        + (f"Never use {', '.join(others)}: they are not {scenario} labels.\n" if others else "")
        + "Backchannels (\"mm-hm\"), neutral continuers and ordinary clarifying or fact-finding questions get "
        "support_strategy [] by default."),
        ("## Additional strict constraints\n"
        "- Rows are in time order and do not overlap unless people truly talk over each other.\n"
        "- Describe only what the video and subtitles show; no diagnoses, no guesses about off-screen events.\n"
        "- Keep descriptions short and concrete."),
        ("## Final self-check before answering\n"
        "Is the answer one JSON object with only the key rows? Does every row have the keys, in order? Is every "
        "name in the allowed set and nobody their own target? Is every subtitle line quoted, verbatim, inside "
        "its own time span? Are all labels from the lists above?"),
    ]
    return "\n\n".join(sections)


def cue_lines(cues: Sequence[Cue]) -> str:
    """The numbered subtitle lines the model annotates, times relative to the clip."""
    lines = []
    for cue in cues:
        who = f"{' & '.join(cue.speakers)}: " if cue.speakers else ""
        lines.append(f"[{cue.index}] {cue.start:.2f}-{cue.end:.2f} {who}{cue.text}")
    return "\n".join(lines)


def annotation_user_prompt(cues: Sequence[Cue], clip_duration: float, *, window: tuple[int, int] | None = None,
                           evidence: str = "") -> str:
    """The pre-annotation request for ``cues`` (one window of them when ``window`` is given)."""
    head = f"The clip lasts {clip_duration:.2f} s."
    if window is not None:
        head += (f" This request covers subtitle lines {window[0]}-{window[1]} of a longer segment; annotate exactly "
                 "these lines.")
    if evidence:
        head += f" {evidence}"
    return f"{head}\n\nThe following is the subtitle text:\n{cue_lines(cues)}"


def retry_prompt(problems: Sequence[str]) -> str:
    """The re-ask after an answer broke rules: the broken rules, and a request for the whole corrected answer."""
    listed = "\n".join(f"- {p}" for p in problems)
    return ("Your answer breaks these rules:\n"
            f"{listed}\nAnswer again with the complete corrected JSON object (all rows, not only the fixed ones).")


def relation_system_prompt(scenario: Scenario, participants: Sequence[str]) -> str:
    """The system prompt of the relation pass (a relation pattern for every therapist row)."""
    return "\n\n".join([
        _ROLE,
        ("## Objective\n"
        f"You receive the annotated rows of a {scenario} therapy segment ({', '.join(participants)} and the "
        f"{THERAPIST}). For every {THERAPIST} row, name the relation pattern that organises the interaction up to "
        "that row, why, and which rows show it. Answer with JSON only: "
        '{"relation_patterns": [{"row_index": 3, "relation_pattern": "<label>", "relation_pattern_reason": '
        '"<one or two sentences>", "relation_pattern_evidence_rows": [1, 2, 3]}]}. Evidence rows are row_index '
        "values of that row or earlier rows."),
        ("## Labels\nFollow the segment's central relational function, not surface wording:\n"
        f"{label_block(relation_taxonomy(scenario).labels, rules='inline')}"),
        ("## Rules\n- Use only the labels above; mixed_transition is never a fallback for uncertainty.\n"
        "- repair_softening is an early, fragile move; the sustained shared stance is the more stable label. A pause "
        "in conflict is not enough while hostility, withdrawal, a coalition or strain still organises the exchange.\n"
        "- No code fences, no text outside the JSON object, no null values."),
    ])


def relation_user_prompt(rows: Sequence[dict[str, object]]) -> str:
    """The relation pass's request: the annotated rows, compact."""
    compact = [{key: row.get(key) for key in ("row_index", "start_time", "end_time", "primary_speaker", "target",
                                              "dialogue_cleaned", "utterance_type", "support_strategy")}
               for row in rows]
    return "The annotated rows:\n" + "\n".join(json.dumps(r, ensure_ascii=False) for r in compact)
