"""ER — Emotion Recognition (protocol §7): the current client speaker's internal emotion and its intensity.

Instances: client rows whose speaker has a speaker-matched gold emotion with a 0-10 intensity and whose
dialogue has at least ``min_dialogue_words`` words, after the first 30% of rows; at most
``checkpoints_per_sample`` evenly spaced per sample. Gold and prediction: ``{"emotion": str, "intensity": int}``.

Scores: ``intensity`` is S_int = max(1, 5 - |pred - gold|) per instance; a failure scores the floor 1.
The judge (``judge_emotion``, ``s_er``) and BERTScore (``bertscore_f1``) add their own per-instance
scores; :meth:`EmotionRecognition.aggregate` averages every score it finds.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict

from pydantic import Field

from rescue.data.shapes import ChatMessage, JsonObject  # open here: a model's answer item, before it is checked
from rescue.data.models import Row, Sample
from rescue.metrics.intensity import INTENSITY_SCORE_FLOOR, intensity_score
from rescue.tasks import generative as gen
from rescue.tasks import prompts
from rescue.tasks.prompts import PromptParts
from rescue.tasks.base import (
    LenientNotes,
    DeclaredTask,
    Instance,
    ParsePolicy,
    Prediction,
    PredictionRecord,
    RenderOptions,
)
from rescue.tasks.parsing import AnswerError, first_text, local_id, parse_answer
from rescue.tasks.registry import register
from rescue.tasks.render import dumps
from rescue.tasks.rubric import ANSWER_RULE, Grade, WholeNumber
from rescue.tasks.spec import (
    Declaration,
    JudgeRubric,
    Metric,
    TaskOptions,
    TextScorer,
    validate_options,
)

EMOTION_KEYS = ("emotion", "predicted_internal_emotion", "internal_emotion", "emotion_description", "predicted_emotion")
INTENSITY_KEYS = ("intensity", "predicted_intensity_score", "intensity_score", "predicted_intensity")

# The first 30% of rows never hold a checkpoint (protocol §7.1).
EARLY_FRACTION = 0.3


class Emotion(TypedDict):
    """An ER value, gold or predicted: the emotion's description and its 0-10 intensity."""

    emotion: str
    intensity: int


def emotion_gold(row: Row) -> Emotion | None:
    """The row's gold: the first internal_emotion item of the speaker with a description and a 0-10 intensity."""
    for item in row.internal_emotion:
        if item.person.strip() != row.speaker or not item.emotion_description.strip():
            continue
        intensity = gen.read_intensity(item.intensity)
        if intensity is not None:
            return {"emotion": item.emotion_description.strip(), "intensity": intensity}
    return None


def emotion_rows(sample: Sample, *, min_dialogue_words: int = 5) -> list[tuple[Row, Emotion]]:
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


# --- reading values, formulas and the judge rubric ---------------------------------------------------------


def emotion_text(value: Any) -> str:
    """The emotion phrase of an ER prediction or gold: ``{"emotion"}`` or ``{"emotion_description"}``."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in ("emotion", "emotion_description", "predicted_internal_emotion"):
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
    return ""


def emotion_intensity(value: Any) -> Any:
    """The intensity in an ER value (prediction or gold, under any key the formats use), None when absent."""
    if isinstance(value, dict):
        for key in ("intensity", "predicted_intensity_score", "gold_intensity_score"):
            if key in value:
                return value[key]
    return None


def intensity_match(predicted: Any, gold: Any) -> float | None:
    """S_int = max(1, 5 - |pred - gold|) (:func:`rescue.metrics.intensity.intensity_score`) on intensities read
    as the authors do (``int(round(float(x)))`` within 0-10); 1 when the prediction has none, ``None`` when
    the gold has none (nothing to compare against)."""
    gold_value = gen.read_intensity(gold)
    if gold_value is None:
        return None
    pred_value = gen.read_intensity(predicted)
    if pred_value is None:
        return INTENSITY_SCORE_FLOOR
    return intensity_score(gold_value, pred_value)


def s_er(emotion: float | None, intensity: float | None) -> float | None:
    """The paper's ER score (S_emo + S_int) / 2, absent when either part is absent."""
    if emotion is None or intensity is None:
        return None
    return (emotion + intensity) / 2


JUDGE_PROMPT = """You are grading one prediction for a therapy user-understanding task.
The target is the internal emotion of the CURRENT speaker at the moment they begin speaking in this turn.
Compare the predicted emotion with the gold annotation. Be lenient with paraphrases and near-synonyms: grade the
meaning, not the wording.
Rubric, emotion_score (integer 1-5): 1 = wrong or contradictory; 2 = weakly related; 3 = partial match;
4 = close; 5 = almost exact.
Do not grade intensity: it is scored separately by formula.
Schema: {"emotion_score": 4, "verdict": "strong|pass|borderline|fail", "notes": "one short sentence"}
""" + ANSWER_RULE


class EmotionGrade(Grade):
    """The judge's grade of an ER emotion on the 1-5 scale."""

    emotion_score: WholeNumber = Field(ge=1, le=5)

    def scores(self) -> dict[str, float]:
        return {"judge_emotion": float(self.emotion_score)}


class EmotionJudgeData(TypedDict):
    """What an ER judge sees besides the turn: the predicted and the gold emotion phrases."""

    predicted_emotion: str
    gold_emotion: str


def _judge_data(prediction: Any, gold: Any) -> EmotionJudgeData:
    return {"predicted_emotion": emotion_text(prediction), "gold_emotion": emotion_text(gold)}


def _finish_judged(record: PredictionRecord) -> None:
    """S_int by formula, never by the judge, and S_ER from it and the judges' S_emo."""
    intensity = (
        intensity_match(emotion_intensity(record.prediction), emotion_intensity(record.gold)) if record.ok else 1.0
    )
    record.scores["intensity"] = intensity
    record.scores["s_er"] = s_er(record.scores.get("judge_emotion"), intensity)


# The authors' ER rubric is the 1-5 one, so both scales grade the same way.
JUDGE = JudgeRubric(
    prompts={"likert": JUDGE_PROMPT, "authors": JUDGE_PROMPT},
    grades={"likert": EmotionGrade, "authors": EmotionGrade},
    data=_judge_data,
    minimum={"likert": {"judge_emotion": 1.0}, "authors": {"judge_emotion": 1.0}},
    human_key="judge_emotion",
    finish=_finish_judged,
)


class ErOptions(TaskOptions):
    """ER's build options: checkpoints per sample and the words a checkpoint's turn needs."""

    checkpoints_per_sample: int = Field(5, ge=0, description="evenly spaced checkpoints per sample (0: all)")
    min_dialogue_words: int = Field(5, ge=0, description="a checkpoint's turn has at least this many words")


class EmotionRecognition(DeclaredTask):
    """ER: the current speaker's internal emotion and its intensity, at checkpoints of each sample."""

    declaration: ClassVar[Declaration] = Declaration(
        name="er",
        title="Emotion Recognition",
        order=5,
        default_context_size=3,
        default_batch_size=5,
        max_tokens=1800,
        shows_row=True,
        hidden="none",
        options=ErOptions,
        metrics=(
            # The paper's S_ER = (judge emotion score + intensity score) / 2.
            Metric("s_er", "judge", headline=True, percent=False, digits=2),
            Metric("bertscore_f1", "BERTScore", headline=True, percent=False, digits=4),
        ),
        outcome="graded",
        answer="emotion",
        judge=JUDGE,
        # The worst value of each score ER reports: what a failed instance scores (a failure is never right).
        score_floors={
            "intensity": INTENSITY_SCORE_FLOOR,
            "judge_emotion": 1.0,  # judge rubric 1-5
            "s_er": 1.0,  # (judge_emotion + intensity) / 2
            "bertscore_f1": 0.0,
        },
        bertscore=TextScorer(lambda value: [emotion_text(value)]),
        gold_rows=emotion_rows,
        paper_counts={"couple": (844, 174), "family": (82, 17)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """ER's checkpoints: evenly spaced turns with an annotated emotion past the early part of each sample."""
        chosen = validate_options(self.name, ErOptions, options)
        limit, min_words = chosen.checkpoints_per_sample, chosen.min_dialogue_words
        instances: list[Instance] = []
        for sample in samples:
            skip = gen.early_cutoff(len(sample.rows), EARLY_FRACTION)
            candidates = emotion_rows(sample, min_dialogue_words=min_words)
            late = [(row, gold) for row, gold in candidates if row.row_index > skip]
            for row, gold in gen.pick_evenly(late, limit, key=lambda pair: pair[0].row_index):
                instances.append(gen.make_instance(self.name, sample, row, gold))
        return instances

    def render(self, batch: list[Instance], options: RenderOptions) -> list[ChatMessage]:
        """The prompt: the message of :meth:`parts`."""
        return self.parts(batch, options).message()

    def parts(self, batch: list[Instance], options: RenderOptions) -> PromptParts:
        """The parts of the ER prompt for ``batch``: its instructions, schema and checkpoints."""
        k = prompts.resolve_context_size(options.context_size, self.declaration.default_context_size)
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
            prompts.context_sentence(k, anchor="the current turn", purpose="the current turn is the main evidence."),
            'emotion: a short, concrete phrase, e.g. "feels dismissed and frustrated" or "ashamed and cornered".',
            "intensity: an integer from 0 (no emotion) to 10 (overwhelming).",
        ]
        schema = {
            "predictions": [
                {"checkpoint_id": "row5", "emotion": "short phrase", "intensity": 6, "reason": "one short sentence"}
            ]
        }
        records = gen.checkpoint_records(batch, options.mode, k, cache=options.rows)
        return gen.checkpoint_parts(lines, batch, options.mode, schema, records)

    def parse(self, raw: str, batch: list[Instance], policy: ParsePolicy = "strict") -> dict[str, Prediction]:
        # Free-text answers have no closed set to drop from: both policies read them the same way.
        """Each checkpoint's emotion and intensity read from the answer."""
        return parse_answer(raw, batch, EMOTION_KEYS + INTENSITY_KEYS, _normalise, policy, gen.MATCHING)

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        """An ER answer holding ``values``."""
        items = [
            {
                "checkpoint_id": local_id(i),
                "emotion": values[i.instance_id]["emotion"],
                "intensity": values[i.instance_id]["intensity"],
            }
            for i in batch
            if i.instance_id in values
        ]
        return dumps({"predictions": items})

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        """The intensity score of one record (its floor when the record failed)."""
        if not record.ok:
            return {"intensity": INTENSITY_SCORE_FLOOR}
        return {"intensity": intensity_score(record.gold["intensity"], record.prediction["intensity"])}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """ER's metrics: the judge's and BERTScore's, and the intensity score recomputed from gold and prediction."""
        result = gen.aggregate_scores(records, self.declaration.score_floors, JUDGE.human_key)
        # Recomputed from gold and prediction so that it never depends on stored scores being present.
        per_instance = [self.instance_scores(r)["intensity"] or INTENSITY_SCORE_FLOOR for r in records]
        result["intensity"] = sum(per_instance) / len(per_instance) if per_instance else None
        result.pop("intensity_unscored", None)
        return result


def _normalise(item: JsonObject, instance: Instance, notes: LenientNotes | None) -> Emotion:
    emotion = first_text(item, EMOTION_KEYS)
    if not emotion:
        raise AnswerError(f"no emotion (expected a non-empty {EMOTION_KEYS[0]!r})")
    raw_intensity = next((item[key] for key in INTENSITY_KEYS if item.get(key) not in (None, "")), None)
    if raw_intensity is None:
        raise AnswerError(f"no intensity (expected {INTENSITY_KEYS[0]!r}, an integer 0-10)")
    return {"emotion": emotion, "intensity": gen.answer_intensity(raw_intensity)}


TASK = register(EmotionRecognition())
