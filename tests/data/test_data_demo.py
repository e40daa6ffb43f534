"""The bundled demo dataset: release format, every annotation filled, every label used, every task buildable.

Instance rules are restated here from protocol.md (ITP §2.1, RPP §4.1, STP §5.1, SSP §6, ER §7.1, VP §8.1) so
this test checks the data independently of the task modules.
"""

from __future__ import annotations

import json
import math
import re

from rescue.data.loading import demo_path
from rescue.data.models import THERAPIST, Sample
from rescue.data.taxonomy import UTTERANCE_TYPE_NAMES, relation_taxonomy, strategy_taxonomy

NON_PERSON = {THERAPIST, "Couple", "Family"}


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9']+", text))


def test_demo_has_three_couple_sessions_and_one_family_session(demo_samples):
    scenarios = [s.scenario for s in demo_samples]
    assert scenarios.count("couple") == 3
    assert scenarios.count("family") == 1
    family = next(s for s in demo_samples if s.scenario == "family")
    assert len(family.participants) == 3
    assert 30 <= len(family.rows) <= 35
    for sample in demo_samples:
        if sample.scenario == "couple":
            assert 20 <= len(sample.rows) <= 26
        assert re.fullmatch(r"demo_(couple|family)_[a-z_]+/\d{3}_session", sample.sample_id)


def test_demo_rows_have_the_release_keys_and_types(real_data_path):
    demo_rows = [row for line in demo_path().read_text(encoding="utf-8").splitlines() for row in json.loads(line)["rows"]]
    real_rows = [row for line in real_data_path.read_text(encoding="utf-8").splitlines() for row in json.loads(line)["rows"]]
    real_keys = {tuple(row) for row in real_rows}
    for row in demo_rows:
        assert tuple(row) in real_keys, f"row {row['row_index']} has a key order the release never uses"
    real_types = {(k, type(v).__name__) for row in real_rows for k, v in row.items()}
    for row in demo_rows:
        for key, value in row.items():
            assert (key, type(value).__name__) in real_types, (key, value)


def test_every_demo_row_is_fully_annotated(demo_samples):
    for sample in demo_samples:
        for row in sample.rows:
            where = f"{sample.sample_id} row {row.row_index}"
            assert row.tone_of_voice and row.dialogue_cleaned and row.target, where
            for cues in (row.body_posture, row.facial_expressions, row.self_directed_behavior):
                assert [c.person for c in cues] == [row.speaker], where
            assert [c.initiator for c in row.interaction_behavior] == [row.speaker], where
            if row.is_therapist:
                assert row.utterance_type == "", where
                assert row.relation_cycle_state and row.relation_cycle_reason and row.relation_cycle_evidence_rows, where
                (strategy,) = row.support_strategy
                assert strategy.provider == THERAPIST and strategy.target and strategy.strategy_content, where
            else:
                assert row.utterance_type in UTTERANCE_TYPE_NAMES, where
                (emotion,) = row.internal_emotion
                assert emotion.person == row.speaker and 0 <= emotion.intensity <= 10, where
                assert row.viewpoints_attitudes and all(v.source == row.speaker for v in row.viewpoints_attitudes), where
                assert not row.support_strategy, where


def test_demo_uses_every_label_of_both_taxonomies(demo_samples):
    for scenario in ("couple", "family"):
        samples = [s for s in demo_samples if s.scenario == scenario]
        relations = {r.relation_pattern for s in samples for r in s.rows if r.relation_pattern}
        relations |= {r.relation_cycle_state for s in samples for r in s.rows if r.relation_cycle_state}
        strategies = {st.strategy_type for s in samples for r in s.rows for st in r.support_strategy}
        assert relations == set(relation_taxonomy(scenario).names), scenario
        assert strategies == set(strategy_taxonomy(scenario).names), scenario
    couple_patterns = {r.relation_pattern for s in demo_samples if s.scenario == "couple" for r in s.rows if r.relation_pattern}
    assert couple_patterns == set(relation_taxonomy("couple").names)
    used_types = {r.utterance_type for s in demo_samples for r in s.rows if not r.is_therapist}
    assert used_types == UTTERANCE_TYPE_NAMES


def _itp(sample: Sample) -> tuple[int, int, int]:
    rows = sample.rows
    positives = sum(1 for t in range(len(rows) - 1) if rows[t + 1].speaker == THERAPIST and rows[t].speaker != THERAPIST)
    negatives = [t for t in range(len(rows) - 1) if THERAPIST not in (rows[t].speaker, rows[t + 1].speaker)]
    same_speaker = sum(1 for t in negatives if rows[t].speaker == rows[t + 1].speaker)
    return positives, len(negatives), same_speaker


def _er(sample: Sample) -> int:
    cut = min(len(sample.rows) - 1, math.ceil(0.3 * len(sample.rows)))
    return sum(
        1
        for row in sample.rows[cut:]
        if row.speaker not in NON_PERSON
        and _words(row.dialogue_cleaned) >= 5
        and any(e.person == row.speaker and e.emotion_description for e in row.internal_emotion)
    )


def test_demo_yields_instances_for_all_six_tasks(demo_samples):
    same_speaker_total = 0
    for sample in demo_samples:
        positives, negatives, same_speaker = _itp(sample)
        same_speaker_total += same_speaker
        assert positives > 0 and negatives > 0, f"ITP: {sample.sample_id}"
        assert any(r.relation_pattern or r.relation_cycle_state for r in sample.rows), f"RPP: {sample.sample_id}"
        therapist_moves = [r.support_strategy[0] for r in sample.rows if r.is_therapist and r.support_strategy]
        assert therapist_moves, f"STP/SSP: {sample.sample_id}"
        assert all(m.strategy_type in strategy_taxonomy(sample.scenario) for m in therapist_moves)
        assert _er(sample) >= 5, f"ER: {sample.sample_id}"
        assert sum(1 for r in sample.rows if r.speaker not in NON_PERSON and any(v.source == r.speaker for v in r.viewpoints_attitudes)) >= 5
    assert same_speaker_total > 0, "ITP needs a same-speaker continuation somewhere"


def test_support_targets_include_individuals_and_the_group(demo_samples):
    for scenario, group in (("couple", "Couple"), ("family", "Family")):
        targets = set()
        for sample in (s for s in demo_samples if s.scenario == scenario):
            for row in sample.rows:
                for move in row.support_strategy:
                    names = [t for t in move.target if t != THERAPIST]
                    targets.add(names[0] if len(names) == 1 else group)
        assert group in targets and len(targets) >= 3, scenario
