"""ER — Emotion Recognition (protocol §7): the current client speaker's internal emotion and its intensity.

Instances: client rows whose speaker has a speaker-matched gold emotion with a 0-10 intensity and whose
dialogue has at least ``min_dialogue_words`` words, after the first 30% of rows; at most
``checkpoints_per_sample`` evenly spaced per sample. Gold and prediction: ``{"emotion": str, "intensity": int}``.

Scores: ``intensity`` is S_int = max(1, 5 - |pred - gold|) per instance; a failure scores the floor 1.
The judge (``judge_emotion``, ``s_er``) and BERTScore (``bertscore_f1``) add their own per-instance
scores; :meth:`EmotionRecognition.aggregate` averages every score it finds.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rescue.data.models import Row, Sample
from rescue.metrics.intensity import INTENSITY_SCORE_FLOOR, intensity_score
from rescue.tasks import generative as gen
from rescue.tasks.base import Instance, Prediction, PredictionRecord, RenderOptions
from rescue.tasks.render import dumps

EMOTION_KEYS = ("emotion", "predicted_internal_emotion", "internal_emotion", "emotion_description", "predicted_emotion")
INTENSITY_KEYS = ("intensity", "predicted_intensity_score", "intensity_score", "predicted_intensity")

# The worst value of each score ER reports: what a failed instance scores (a failure is never right).
SCORE_FLOORS: dict[str, float] = {
    "intensity": INTENSITY_SCORE_FLOOR,
    "judge_emotion": 1.0,  # judge rubric 1-5
    "s_er": 1.0,  # (judge_emotion + intensity) / 2
    "bertscore_f1": 0.0,
}


def emotion_gold(row: Row) -> dict[str, Any] | None:
    """The row's gold: the first internal_emotion item of the speaker with a description and a 0-10 intensity."""
    for item in row.internal_emotion:
        if item.person.strip() != row.speaker or not item.emotion_description.strip():
            continue
        intensity = gen.gold_intensity(item.intensity)
        if intensity is not None:
            return {"emotion": item.emotion_description.strip(), "intensity": intensity}
    return None


def emotion_rows(sample: Sample, *, min_dialogue_words: int = 5) -> list[tuple[Row, dict[str, Any]]]:
    """Every client row of ``sample`` that could be an ER checkpoint, with its gold (no cut-off, no sampling).

    Offline baselines retrieve from this pool too.
    """
    rows = []
    for row in sample.rows:
        if not gen.is_client_speaker(row.speaker) or gen.word_count(row.dialogue_cleaned) < min_dialogue_words:
            continue
        gold = emotion_gold(row)
        if gold is not None:
            rows.append((row, gold))
    return rows


class EmotionRecognition:
    name: ClassVar[str] = "er"
    title: ClassVar[str] = "Emotion Recognition"
    default_context_size: ClassVar[int] = 3
    default_batch_size: ClassVar[int] = 5
    max_tokens: ClassVar[int] = 1800
    checkpoints_per_sample: ClassVar[int] = 5
    min_dialogue_words: ClassVar[int] = 5
    early_fraction: ClassVar[float] = 0.3  # the first 30% of rows never hold a checkpoint

    def build(
        self,
        samples: list[Sample],
        *,
        checkpoints_per_sample: int | None = None,
        min_dialogue_words: int | None = None,
        **_other_tasks_options: Any,
    ) -> list[Instance]:
        limit = self.checkpoints_per_sample if checkpoints_per_sample is None else checkpoints_per_sample
        min_words = self.min_dialogue_words if min_dialogue_words is None else min_dialogue_words
        instances: list[Instance] = []
        for sample in samples:
            skip = gen.early_cutoff(len(sample.rows), self.early_fraction)
            candidates = emotion_rows(sample, min_dialogue_words=min_words)
            late = [(row, gold) for row, gold in candidates if row.row_index > skip]
            for row, gold in gen.pick_evenly(late, limit, key=lambda pair: pair[0].row_index):
                instances.append(gen.make_instance(self.name, sample, row, gold))
        return instances

    def render(self, batch: list[Instance], options: RenderOptions) -> list[dict[str, str]]:
        k = gen.resolve_context_size(options, self.default_context_size)
        group = batch[0].sample.scenario if batch else "couple"
        lines = [
            f"You are assessing emotion recognition in a {group} therapy session.",
            (
                "For each checkpoint, predict the internal emotion of the CURRENT speaker (the current_turn's "
                "primary_speaker) at the moment they speak this turn, and how intense it is."
            ),
            (
                "Describe only that speaker's emotion: never the partner's, another family member's, the "
                "therapist's or the group's."
            ),
            "Use only what is shown: there are no later rows and no outside information.",
            gen.context_sentence(k, "the current turn is the main evidence."),
            'emotion: a short, concrete phrase, e.g. "feels dismissed and frustrated" or "ashamed and cornered".',
            "intensity: an integer from 0 (no emotion) to 10 (overwhelming).",
        ]
        schema = {
            "predictions": [
                {"checkpoint_id": "row5", "emotion": "short phrase", "intensity": 6, "reason": "one short sentence"}
            ]
        }
        records = gen.checkpoint_records(batch, options.mode, k)
        return gen.user_prompt(lines, batch, options.mode, schema, records)

    def parse(self, raw: str, batch: list[Instance]) -> dict[str, Prediction]:
        return gen.parse_answer(raw, batch, EMOTION_KEYS + INTENSITY_KEYS, _normalise)

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        items = [
            {
                "checkpoint_id": gen.local_id(i),
                "emotion": values[i.instance_id]["emotion"],
                "intensity": values[i.instance_id]["intensity"],
            }
            for i in batch
            if i.instance_id in values
        ]
        return dumps({"predictions": items})

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        if not record.ok:
            return {"intensity": INTENSITY_SCORE_FLOOR}
        return {"intensity": intensity_score(record.gold["intensity"], record.prediction["intensity"])}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        result = gen.aggregate_scores(records, SCORE_FLOORS)
        # Recomputed from gold and prediction so that it never depends on stored scores being present.
        per_instance = [self.instance_scores(r)["intensity"] or INTENSITY_SCORE_FLOOR for r in records]
        result["intensity"] = sum(per_instance) / len(per_instance) if per_instance else None
        result.pop("intensity_unscored", None)
        return result


def _normalise(item: dict[str, Any], instance: Instance) -> dict[str, Any]:
    emotion = gen.first_text(item, EMOTION_KEYS)
    if not emotion:
        raise ValueError(f"no emotion (expected a non-empty {EMOTION_KEYS[0]!r})")
    raw_intensity = next((item[key] for key in INTENSITY_KEYS if item.get(key) not in (None, "")), None)
    if raw_intensity is None:
        raise ValueError(f"no intensity (expected {INTENSITY_KEYS[0]!r}, an integer 0-10)")
    return {"emotion": emotion, "intensity": gen.answer_intensity(raw_intensity)}


TASK = EmotionRecognition()
