"""The label sets of RESCUE-Bench, in one place.

Label order is the order shown to models (the authors' prompt order). Definitions are our own
wording of the paper's Tables 7-10 and App. D.3; the authors' RPP taxonomy module is not public.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from rescue.data.models import Scenario

# The internal-emotion intensity scale: whole points from 0 (none) to 10 (overwhelming). Validation, the
# build's checks, the ER task and its baselines read it; rescue.metrics.intensity (which imports nothing from
# rescue) states the same bounds, and tests/tasks/test_er_vp.py holds them equal.
INTENSITY_SCALE = (0, 10)


@dataclass(frozen=True)
class Label:
    """One label of a taxonomy: its definition, when to use it and when not, and its basis."""

    name: str
    definition: str
    use_when: tuple[str, ...] = ()
    do_not_use_when: tuple[str, ...] = ()
    basis: str = ""


def label_block(labels: Iterable[Label], *, rules: Literal["below", "inline", "none"] = "below") -> str:
    """One bullet per label with its definition, the one label list every prompt shows. When to use a label
    and when not go on lines below it (``below``: the tasks' prompts), after the definition (``inline``: the
    build's annotation prompt) or nowhere (``none``)."""
    lines = []
    for label in labels:
        line = f"- {label.name}: {label.definition}"
        use, avoid = "; ".join(label.use_when), "; ".join(label.do_not_use_when)
        if rules == "inline":
            line += (f" Use when: {use}." if use else "") + (f" Not when: {avoid}." if avoid else "")
        lines.append(line)
        if rules == "below":
            lines += [f"  {rule}" for rule in label_rules(label)]
    return "\n".join(lines)


def label_rules(label: Label) -> list[str]:
    """When to use ``label`` and when not, one sentence each, as the lines below its bullet in
    :func:`label_block` state them (none where the label has no such rule)."""
    use, avoid = "; ".join(label.use_when), "; ".join(label.do_not_use_when)
    return ([f"Use when: {use}."] if use else []) + ([f"Do not use when: {avoid}."] if avoid else [])


def stated_definition(label: Label) -> str:
    """The whole definition a prompt's label block states of ``label``, in one line: its definition, then its
    rules."""
    return " ".join([label.definition, *label_rules(label)])


@dataclass(frozen=True)
class Taxonomy:
    """The labels of one kind (relation patterns or strategies) for one scenario."""

    kind: str
    scenario: Scenario
    labels: tuple[Label, ...] = field(default_factory=tuple)

    @property
    def names(self) -> list[str]:
        """The label names, in the taxonomy's order."""
        return [label.name for label in self.labels]

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def definition(self, name: str) -> str:
        """The definition of the label called ``name``."""
        return next(label.definition for label in self.labels if label.name == name)


_REPAIR_RELATION = Label(
    "repair_softening",
    "Defensiveness, blame or rigidity drops; vulnerability, apology, validation, openness or "
    "reconnection begins to appear. The repair is emerging, not yet established.",
    use_when=("someone visibly softens, apologises, validates or re-engages",),
    do_not_use_when=("conflict merely pauses while hostility or withdrawal still organises the exchange",),
    basis="EFT; Gottman",
)

COUPLE_RELATION = Taxonomy(
    "relation_pattern",
    "couple",
    (
        Label(
            "pursue_withdraw",
            "One partner presses or seeks engagement while the other avoids, shuts down, minimises "
            "or disengages (asymmetric pressure and retreat).",
            use_when=("one side pushes, criticises or demands and the other deflects, goes quiet or leaves",),
            do_not_use_when=("both partners escalate (attack_attack)",),
            basis="EFT",
        ),
        Label(
            "attack_attack",
            "Both partners criticise, blame, defend or counter-attack; mutual escalation with both "
            "staying engaged.",
            use_when=("both sides escalate at once",),
            do_not_use_when=("only one side presses while the other retreats (pursue_withdraw)",),
            basis="EFT; Gottman",
        ),
        Label(
            "withdraw_withdraw",
            "Both partners avoid emotional engagement, respond little or disengage together "
            "(silence, minimal replies, topic avoidance); nobody pursues.",
            use_when=("both partners are shut down or avoid the issue",),
            do_not_use_when=("one partner is still pursuing",),
            basis="EFT; Gottman",
        ),
        _REPAIR_RELATION,
        Label(
            "constructive_alignment",
            "Partners move toward a shared understanding, cooperation or joint problem solving; "
            "more stable than repair_softening.",
            use_when=("a sustained shared, cooperative stance organises the exchange",),
            do_not_use_when=("a pause in conflict only", "repair has just begun (repair_softening)"),
            basis="EFT; IBCT",
        ),
        Label(
            "mixed_transition",
            "Several strong relational patterns coexist, or the interaction is clearly shifting "
            "between two patterns.",
            use_when=("two strong patterns are salient at once", "a clinically visible pivot between patterns"),
            do_not_use_when=("you are merely uncertain: it is not a fallback",),
            basis="EFT; IBCT",
        ),
    ),
)

FAMILY_RELATION = Taxonomy(
    "relation_pattern",
    "family",
    (
        Label(
            "escalation_conflict",
            "Two or more members are in overt conflict, argument, blame or an escalating emotional exchange.",
            use_when=("broad reciprocal escalation among members",),
            basis="SFT; FST",
        ),
        Label(
            "pursue_withdraw",
            "One member presses or seeks engagement while another avoids, shuts down or disengages.",
            basis="FST; EFT",
        ),
        Label(
            "mutual_disengagement",
            "Key members withdraw together, stay silent, avoid the central issue or participate little.",
            basis="SFT; FST",
        ),
        Label(
            "cross_generational_coalition",
            "Members of different generations ally around or against another member (coalition, triangulation).",
            use_when=("one specific cross-generation alliance or triangle organises the interaction",),
            do_not_use_when=("broader role confusion with no single dominant coalition (boundary_hierarchy_strain)",),
            basis="SFT; FST",
        ),
        Label(
            "boundary_hierarchy_strain",
            "Unclear boundaries, unstable hierarchy, role reversal, subsystem tension or parent-child role confusion.",
            use_when=("broad role confusion, parentification or unclear boundaries",),
            do_not_use_when=("one specific cross-generation alliance dominates (cross_generational_coalition)",),
            basis="SFT",
        ),
        Label(
            "repair_softening",
            _REPAIR_RELATION.definition,
            _REPAIR_RELATION.use_when,
            _REPAIR_RELATION.do_not_use_when,
            "EFT; FST",
        ),
        Label(
            "cooperative_family_alliance",
            "Several members take a coordinated, constructive, shared stance toward the problem; more "
            "stable than repair_softening.",
            use_when=("a sustained shared stance among several members",),
            do_not_use_when=("a pause in conflict only",),
            basis="FST",
        ),
        Label(
            "mixed_transition",
            "Several family dynamics are salient at once, or the interaction is clearly shifting between patterns.",
            use_when=("two strong patterns are salient at once", "a clinically visible pivot between patterns"),
            do_not_use_when=("you are merely uncertain: it is not a fallback",),
            basis="SFT; FST",
        ),
    ),
)

COUPLE_STRATEGY = Taxonomy(
    "support_strategy",
    "couple",
    (
        Label("counterbalance", "Restores voice, space or participation for a less powerful or less heard partner, restoring symmetry.", basis="WAT"),
        Label("safeguard", "Protects a vulnerable partner from being shamed, attacked, cornered, overwhelmed or flooded right now.", basis="WAT"),
        Label("goal_align", "Redirects the partners toward a shared therapeutic task, common goal or collaborative frame.", basis="WAT"),
        Label("track", "Follows, names or clarifies the ongoing interactional process, sequence or negative cycle without changing its meaning.", basis="EFT"),
        Label("reframe", "Changes the meaning of an event or interaction, often from individual blame to a shared relational pattern.", basis="EFT; IBCT"),
        Label("evoke", "Deepens access to primary emotions, attachment needs, vulnerability, shame, fear or longing beneath the surface.", basis="EFT"),
        Label("enact", "Invites one partner to speak directly to the other in the room rather than to the therapist.", basis="EFT"),
        Label("join", "Promotes empathic connection and emotional contact between the partners, making one partner's emotion receivable by the other.", basis="EFT; IBCT"),
        Label("detach", "Helps the partners step back together and observe the problem as a shared pattern rather than fight as opponents.", basis="IBCT"),
        Label("repair", "Supports apology, acknowledgement of hurt, clarification of intent, emotional repair or reconnection after a rupture.", basis="EFT"),
    ),
)

FAMILY_STRATEGY = Taxonomy(
    "support_strategy",
    "family",
    (
        Label("safeguard", "Protects a vulnerable member from scapegoating, attack, shame, threat or being overwhelmed.", basis="SFT"),
        Label("join", "Builds trust, affiliation and working alliance with the family system, lowering defensiveness so the family stays engaged.", basis="SFT"),
        Label("track", "Follows and names recurring family processes: escalation, alliance formation, disengagement, triangulation.", basis="SFT; FST"),
        Label("counterbalance", "Brings a less-heard, lower-power or marginalised member back into the interaction.", basis="SFT"),
        Label("enact", "Invites members to interact directly in session so the pattern can be observed and reorganised.", basis="SFT"),
        Label("boundary", "Clarifies or reorganises boundaries, hierarchy, roles, subsystems or intergenerational structure.", basis="SFT"),
        Label("reframe", "Moves the meaning of a problem from individual blame to a systemic or shared family process.", basis="FST; SFT"),
        Label("repair", "Supports apology, recognition of hurt, emotional repair or reconnection among members.", basis="EFT; FST"),
    ),
)

UTTERANCE_TYPES: tuple[Label, ...] = (
    Label("accusation", "Blaming or criticising another person."),
    Label("defense", "Justifying, rebutting or denying."),
    Label("disclosure", "Revealing a feeling, vulnerability or need."),
    Label("request", "Asking for a response, change, reassurance or need."),
    Label("recollection", "Narrating a past event."),
    Label("reflection", "Insight about one's own pattern."),
    Label("repair", "Softening, apologising or reconnecting."),
    Label("withdrawal", "Shutting down, deflecting or refusing."),
    Label("validation", "Affirming another's experience."),
    Label("other", "Nothing else fits."),
)
UTTERANCE_TYPE_NAMES = frozenset(label.name for label in UTTERANCE_TYPES)

_RELATION = {"couple": COUPLE_RELATION, "family": FAMILY_RELATION}
_STRATEGY = {"couple": COUPLE_STRATEGY, "family": FAMILY_STRATEGY}


def relation_taxonomy(scenario: Scenario) -> Taxonomy:
    """The relation-pattern labels of ``scenario``."""
    return _RELATION[scenario]


def strategy_taxonomy(scenario: Scenario) -> Taxonomy:
    """The support-strategy labels of ``scenario``."""
    return _STRATEGY[scenario]


# "X wins over Y" when both fit a therapist turn (paper App. D.3 and the pre-annotation prompts), in the
# order the prompts list them. Used by prompts that explain the labels; never by scoring.
_STRATEGY_PRECEDENCE: dict[str, tuple[tuple[str, str], ...]] = {
    "couple": (
        ("safeguard", "counterbalance"), ("counterbalance", "track"), ("repair", "join"), ("enact", "evoke"),
        ("goal_align", "track"), ("detach", "track"), ("reframe", "track"),
    ),
    "family": (
        ("safeguard", "counterbalance"), ("boundary", "track"), ("reframe", "track"), ("join", "track"),
        ("counterbalance", "track"), ("repair", "join"), ("enact", "track"),
    ),
}


def strategy_precedence(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """``(winner, loser)`` pairs: when both labels fit one therapist turn, the winner is used."""
    return _STRATEGY_PRECEDENCE[scenario]
