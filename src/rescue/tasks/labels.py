"""Label sets per task and scenario: support targets (STP), synonyms that parsing may map, and the
answer vocabulary of ITP.

Synonyms are only ever applied inside one instance's closed set (see ``parsing.normalize_label``), so a
synonym of a label the scenario lacks can never produce that label.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rescue.data.models import GROUP_LABELS, THERAPIST, Row, Sample

ITP_LABELS = ["yes", "no"]
ITP_SYNONYMS: dict[str, str] = {
    "y": "yes",
    "true": "yes",
    "1": "yes",
    "speak": "yes",
    "should_speak": "yes",
    "intervene": "yes",
    "n": "no",
    "false": "no",
    "0": "no",
    "listen": "no",
    "keep_listening": "no",
    "continue_listening": "no",
    "do_not_speak": "no",
    "wait": "no",
}

# Spelling variants and common names from the couple/family-therapy literature for the RPP labels.
RELATION_SYNONYMS: dict[str, str] = {
    "demand_withdraw": "pursue_withdraw",
    "pursuer_distancer": "pursue_withdraw",
    "pursue_distance": "pursue_withdraw",
    "pursuit_withdrawal": "pursue_withdraw",
    "mutual_attack": "attack_attack",
    "mutual_withdrawal": "withdraw_withdraw",
    "repair": "repair_softening",
    "softening": "repair_softening",
    "repair_and_softening": "repair_softening",
    "constructive": "constructive_alignment",
    "alignment": "constructive_alignment",
    "mixed": "mixed_transition",
    "transition": "mixed_transition",
    "escalation": "escalation_conflict",
    "conflict_escalation": "escalation_conflict",
    "disengagement": "mutual_disengagement",
    "coalition": "cross_generational_coalition",
    "cross_generation_coalition": "cross_generational_coalition",
    "triangulation": "cross_generational_coalition",
    "boundary_strain": "boundary_hierarchy_strain",
    "hierarchy_strain": "boundary_hierarchy_strain",
    "boundary_hierarchy": "boundary_hierarchy_strain",
    "cooperative_alliance": "cooperative_family_alliance",
    "family_alliance": "cooperative_family_alliance",
}

STRATEGY_SYNONYMS: dict[str, str] = {
    "counter_balance": "counterbalance",
    "counterbalancing": "counterbalance",
    "safeguarding": "safeguard",
    "protect": "safeguard",
    "goal_alignment": "goal_align",
    "goal_aligning": "goal_align",
    "tracking": "track",
    "reframing": "reframe",
    "evoking": "evoke",
    "evocation": "evoke",
    "enactment": "enact",
    "enacting": "enact",
    "joining": "join",
    "detachment": "detach",
    "unified_detachment": "detach",
    "boundary_making": "boundary",
    "boundary_setting": "boundary",
    "boundaries": "boundary",
    "repairing": "repair",
}

_GROUP_SYNONYMS: dict[str, tuple[str, ...]] = {
    "couple": ("both", "both partners", "the couple", "partners", "the partners", "both of them", "the two of them"),
    "family": (
        "the family",
        "whole family",
        "the whole family",
        "everyone",
        "all",
        "all members",
        "family system",
        "the family system",
        "whole group",
    ),
}


def group_synonyms(scenario: str) -> dict[str, str]:
    """Ways of naming the whole couple or family that cannot mean anything else in that scenario."""
    return {alias: GROUP_LABELS[scenario] for alias in _GROUP_SYNONYMS[scenario]}


def canonical_target(names: Iterable[str]) -> tuple[str, ...]:
    """Stripped, non-empty names other than the therapist, in order."""
    return tuple(n for n in (name.strip() for name in names) if n and n != THERAPIST)


def target_label(names: Iterable[str], scenario: str) -> str:
    """One support-target label: the single person named, or the group label for two or more (the authors'
    rule, so a dyad inside a family becomes ``Family``); empty when nobody is named."""
    people = canonical_target(names)
    if not people:
        return ""
    return people[0] if len(people) == 1 else GROUP_LABELS[scenario]


def support_target(row: Row, scenario: str) -> tuple[str, str]:
    """The gold support target of a therapist row and where it came from: the first strategy's target,
    else the row's own target; ``("", "")`` when neither names anyone."""
    first = row.support_strategy[0]
    label = target_label(first.target, scenario)
    if label:
        return label, "support_strategy"
    label = target_label(row.target, scenario)
    return (label, "row_target") if label else ("", "")


def target_candidates(sample: Sample) -> list[str]:
    """The closed set of STP: every participant, then the group label.

    Unlike the authors we do not add labels collected from later therapist rows (future information)
    and never append the gold: an instance whose target is outside this set is unresolvable and dropped.
    """
    candidates = [name.strip() for name in sample.participants if name.strip() and name.strip() != THERAPIST]
    return list(dict.fromkeys(candidates + [sample.group_label]))


def support_rows(sample: Sample) -> Iterator[tuple[Row, str, str]]:
    """Therapist rows whose first strategy has a type and whose target resolves inside the sample's
    candidate set, with that target and its source field. Shared by STP and SSP."""
    candidates = target_candidates(sample)
    for row in sample.rows:
        if not row.is_therapist or not row.support_strategy or not row.support_strategy[0].strategy_type.strip():
            continue
        target, source = support_target(row, sample.scenario)
        if target and target in candidates:
            yield row, target, source
