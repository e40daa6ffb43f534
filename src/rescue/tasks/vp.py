"""VP — Viewpoint Prediction (protocol §8): who holds which view of whom in the current client turn.

Instances: client rows with at least one gold viewpoint whose source is the speaker and which has a target
and a viewpoint; at most ``checkpoints_per_sample`` evenly spaced per sample (no early cut-off).
Gold: a list of ``{"source", "target", "viewpoint", "attitude"}``; prediction: a list of
``{"source", "target", "viewpoint"}`` (at least one).

Scores: ``pair_recall`` is the share of gold (source, target) pairs that the prediction names
(case-insensitive); a failure scores 0. The judge (``judge``) and BERTScore (``bertscore_f1``) add their
own per-instance scores; :meth:`ViewpointPrediction.aggregate` averages every score it finds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NotRequired, TypedDict

from pydantic import Field

from rescue.data.shapes import ChatMessage, JsonObject  # open here: a model's answer item, before it is checked
from rescue.data.models import GROUP_LABELS, Row, Sample
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

VIEWPOINT_LIST_KEYS = ("viewpoints", "predicted_viewpoints", "viewpoints_attitudes")
VIEWPOINT_TEXT_KEYS = ("viewpoint", "view", "predicted_viewpoint", "description")


class Viewpoint(TypedDict):
    """A VP value's viewpoint, gold or predicted: who holds it (source), about whom (target), the view, and the
    attitude where the gold gives one."""

    source: str
    target: str
    viewpoint: str
    attitude: NotRequired[str]


def viewpoint_gold(row: Row) -> list[Viewpoint]:
    """Every viewpoint of the row held by its speaker that names a target and a view."""
    return [
        {
            "source": v.source.strip(),
            "target": v.target.strip(),
            "viewpoint": v.viewpoint.strip(),
            "attitude": v.attitude.strip(),
        }
        for v in row.viewpoints_attitudes
        if v.source.strip() == row.speaker and v.target.strip() and v.viewpoint.strip()
    ]


def viewpoint_rows(sample: Sample) -> list[tuple[Row, list[Viewpoint]]]:
    """Every client row of ``sample`` that could be a VP checkpoint, with its gold (no sampling)."""
    rows = []
    for row in sample.rows:
        if gen.is_client_speaker(row.speaker):
            gold = viewpoint_gold(row)
            if gold:
                rows.append((row, gold))
    return rows


def participants(sample: Sample) -> list[str]:
    """The people a viewpoint can be about, Therapist included, in order of first appearance.

    Built from the declared participants, speakers and row targets only. The authors also add
    viewpoint sources and targets, which are gold annotations; we leave those out.
    """
    candidates = [*sample.participants]
    for row in sample.rows:
        candidates.append(row.primary_speaker)
        candidates += row.target
    groups = GROUP_LABELS.values()
    # dict keys keep first appearances in order; every prompt of the sample asks for this list
    return [name for name in dict.fromkeys(map(str.strip, candidates)) if name and name not in groups]


# --- reading values and the judge rubric ---------------------------------------------------------------


def viewpoint_items(value: Any, *, with_attitude: bool = False) -> list[Viewpoint]:
    """VP viewpoints as ``{source, target, viewpoint}`` (+ ``attitude`` for gold), skipping empty ones."""
    if isinstance(value, dict):
        value = value.get("viewpoints") or value.get("predicted_viewpoints") or [value]
    items: list[Viewpoint] = []
    for item in value or []:
        if not isinstance(item, dict):
            continue
        viewpoint = str(item.get("viewpoint") or "").strip()
        if not viewpoint:
            continue
        clean: Viewpoint = {
            "source": str(item.get("source") or "").strip(),
            "target": str(item.get("target") or "").strip(),
            "viewpoint": viewpoint,
        }
        if with_attitude and str(item.get("attitude") or "").strip():
            clean["attitude"] = str(item["attitude"]).strip()
        items.append(clean)
    return items


def viewpoint_texts(value: Any) -> list[str]:
    """The viewpoint texts of a VP value."""
    return [v["viewpoint"] for v in viewpoint_items(value)]


def authors_to_likert(source_target: int, viewpoint: int) -> float:
    """The authors' VP total (0-6) on the paper's 1-5 scale: 1 + 4 * total / 6 (0 -> 1, 3 -> 3, 6 -> 5)."""
    return 1 + 4 * (source_target + viewpoint) / 6


LIKERT_PROMPT = """You are grading one prediction for a therapy viewpoint-understanding task: who holds what view
of whom in the CURRENT turn.
Compare the predicted viewpoints with the gold viewpoints. Consider both whether the source -> target pairings are
recovered and whether each viewpoint means the same as its gold counterpart. Be lenient with paraphrase.
Rubric, score (integer 1-5): 1 = pairings and viewpoints wrong or missing; 2 = weakly related (some pairing right,
views only loosely related); 3 = partially recovered (some pairings and views right, others missing or off);
4 = close (the pairings right and the views close in meaning); 5 = almost exact (every gold pairing and view
recovered, nothing contradictory added).
Schema: {"score": 4, "verdict": "strong|pass|borderline|fail", "notes": "one short sentence"}
""" + ANSWER_RULE

AUTHORS_PROMPT = """You are grading one prediction for a therapy viewpoint-understanding task: who holds what view
of whom in the CURRENT turn.
Compare the predicted viewpoints with the gold viewpoints. Be lenient with paraphrase.
Rubric:
- source_target_score (integer 0-2): 0 = source/target pairings mostly wrong or missing; 1 = partially recovered;
  2 = all gold pairings essentially recovered.
- viewpoint_score (integer 0-4): 0 = wrong; 1 = weakly related; 2 = close; 3 = essentially the same;
  4 = almost exact.
Schema: {"source_target_score": 2, "viewpoint_score": 3, "verdict": "strong|pass|borderline|fail",
"notes": "one short sentence"}
""" + ANSWER_RULE


class ViewpointLikertGrade(Grade):
    """The judge's grade of VP viewpoints on the 1-5 scale."""

    score: WholeNumber = Field(ge=1, le=5)

    def scores(self) -> dict[str, float]:
        return {"judge": float(self.score)}


class ViewpointAuthorsGrade(Grade):
    """The judge's grade of VP viewpoints on the authors' scales (source/target 0-2, viewpoint 0-4)."""

    source_target_score: WholeNumber = Field(ge=0, le=2)
    viewpoint_score: WholeNumber = Field(ge=0, le=4)

    def scores(self) -> dict[str, float]:
        # The judge's own total, if it sends one, is ignored: the sum is recomputed here.
        total = self.source_target_score + self.viewpoint_score
        return {
            "judge": authors_to_likert(self.source_target_score, self.viewpoint_score),
            "judge_source_target": float(self.source_target_score),
            "judge_viewpoint": float(self.viewpoint_score),
            "judge_total": float(total),
        }


class ViewpointJudgeData(TypedDict):
    """What a VP judge sees besides the turn: the predicted viewpoints, and the gold ones with their attitudes."""

    predicted_viewpoints: list[Viewpoint]
    gold_viewpoints: list[Viewpoint]


def _judge_data(prediction: Any, gold: Any) -> ViewpointJudgeData:
    return {
        "predicted_viewpoints": viewpoint_items(prediction),
        "gold_viewpoints": viewpoint_items(gold, with_attitude=True),
    }


JUDGE = JudgeRubric(
    prompts={"likert": LIKERT_PROMPT, "authors": AUTHORS_PROMPT},
    grades={"likert": ViewpointLikertGrade, "authors": ViewpointAuthorsGrade},
    data=_judge_data,
    minimum={
        "likert": {"judge": 1.0},
        "authors": {"judge": 1.0, "judge_source_target": 0.0, "judge_viewpoint": 0.0, "judge_total": 0.0},
    },
    human_key="judge",
)


class VpOptions(TaskOptions):
    """VP's build options: checkpoints per sample."""

    checkpoints_per_sample: int = Field(5, ge=0, description="evenly spaced checkpoints per sample (0: all)")


class ViewpointPrediction(DeclaredTask):
    """VP: who holds which view of whom at checkpoints of each sample."""

    declaration: ClassVar[Declaration] = Declaration(
        name="vp",
        title="Viewpoint Prediction",
        order=6,
        default_context_size=3,
        default_batch_size=0,  # the authors send a whole sample per request
        max_tokens=2200,
        shows_row=True,
        hidden="none",
        options=VpOptions,
        metrics=(
            Metric("judge", "judge", headline=True, percent=False, digits=2),
            Metric("bertscore_f1", "BERTScore", headline=True, percent=False, digits=4),
        ),
        outcome="graded",
        answer="viewpoints",
        judge=JUDGE,
        # The worst value of each score VP reports: what a failed instance scores (a failure is never right).
        score_floors={
            "pair_recall": 0.0,
            "judge": 1.0,  # judge rubric 1-5, as the paper reports VP
            # The authors' VP rubric (JUDGE above, scale "authors"): pairing 0-2 + viewpoint 0-4 = total 0-6.
            "judge_source_target": 0.0,
            "judge_viewpoint": 0.0,
            "judge_total": 0.0,
            "bertscore_f1": 0.0,
        },
        bertscore=TextScorer(viewpoint_texts, matching="one_to_one"),
        gold_rows=viewpoint_rows,
        paper_counts={"couple": (775, 170), "family": (80, 17)},
    )

    def build(self, samples: list[Sample], **options: object) -> list[Instance]:
        """VP's checkpoints: evenly spaced turns with annotated viewpoints."""
        limit = validate_options(self.name, VpOptions, options).checkpoints_per_sample
        instances: list[Instance] = []
        for sample in samples:
            people = participants(sample)
            for row, gold in gen.pick_evenly(viewpoint_rows(sample), limit, key=lambda pair: pair[0].row_index):
                instances.append(gen.make_instance(self.name, sample, row, gold, participants=people))
        return instances

    def render(self, batch: list[Instance], options: RenderOptions) -> list[ChatMessage]:
        """The prompt: the message of :meth:`parts`."""
        return self.parts(batch, options).message()

    def parts(self, batch: list[Instance], options: RenderOptions) -> PromptParts:
        """The parts of the VP prompt for ``batch``: its instructions, schema and checkpoints."""
        k = prompts.resolve_context_size(options.context_size, self.declaration.default_context_size)
        sample = batch[0].sample if batch else None
        group = sample.group_label if sample else "Couple"
        lines = [
            f"You are assessing viewpoint understanding in a {group.lower()} therapy session.",
            (
                "For each checkpoint, state the viewpoints the CURRENT speaker (the current_turn's primary_speaker) "
                "expresses in this turn about other people: who holds the view (source, normally the current "
                "speaker), whom it is about (target) and what the view is."
            ),
            f"A target is a name from participants, or {group} for the {group.lower()} as a whole.",
            "If the speaker expresses distinct views about different people, give each one; give at least one.",
            "Use only what is shown: there are no later rows and no outside information.",
            prompts.context_sentence(k, anchor="the current turn",
                                     purpose="use it only to resolve who is meant; the current turn is the main evidence."),
            'viewpoint: a short, concrete English phrase, for example "she is impossible to please".',
        ]
        schema = {
            "predictions": [
                {
                    "checkpoint_id": "row5",
                    "viewpoints": [{"source": "<speaker>", "target": "<person>", "viewpoint": "short phrase"}],
                    "reason": "one short sentence",
                }
            ]
        }
        # build worked the list out once per sample; an instance made elsewhere may not carry it
        people = (batch[0].extra.get("participants") or participants(sample)) if sample else []
        records = gen.checkpoint_records(batch, options.mode, k, participants=people, cache=options.rows)
        return gen.checkpoint_parts(lines, batch, options.mode, schema, records)

    def parse(self, raw: str, batch: list[Instance], policy: ParsePolicy = "strict") -> dict[str, Prediction]:
        # Free-text answers have no closed set to drop from: both policies read them the same way.
        """Each checkpoint's viewpoints read from the answer."""
        return parse_answer(raw, batch, VIEWPOINT_LIST_KEYS + ("target",), _normalise, policy, gen.MATCHING)

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        """A VP answer holding ``values``."""
        items = [
            {
                "checkpoint_id": local_id(i),
                "viewpoints": [
                    {"source": v["source"], "target": v["target"], "viewpoint": v["viewpoint"]}
                    for v in values[i.instance_id]
                ],
            }
            for i in batch
            if i.instance_id in values
        ]
        return dumps({"predictions": items})

    def instance_scores(self, record: PredictionRecord) -> dict[str, float | None]:
        """The pair recall of one record (its floor when the record failed)."""
        if not record.ok:
            return {"pair_recall": self.declaration.score_floors["pair_recall"]}
        return {"pair_recall": pair_recall(record.gold, record.prediction)}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        """VP's metrics: the judge's and BERTScore's, and pair recall recomputed from gold and prediction."""
        result = gen.aggregate_scores(records, self.declaration.score_floors, JUDGE.human_key)
        per_instance = [self.instance_scores(r)["pair_recall"] or 0.0 for r in records]
        result["pair_recall"] = sum(per_instance) / len(per_instance) if per_instance else None
        result.pop("pair_recall_unscored", None)
        return result


def _pair(view: Viewpoint) -> tuple[str, str]:
    # A record read back may lack a key (another version's, a hand-edited file): it reads as "".
    return (str(view.get("source", "")).strip().casefold(), str(view.get("target", "")).strip().casefold())


def pair_recall(gold: Sequence[Viewpoint], predicted: Sequence[Viewpoint]) -> float:
    """Share of the gold (source, target) pairs that the prediction names, ignoring case."""
    wanted = {_pair(v) for v in gold}
    if not wanted:
        return 0.0
    return len(wanted & {_pair(v) for v in predicted}) / len(wanted)


def _normalise(item: JsonObject, instance: Instance, notes: LenientNotes | None) -> list[Viewpoint]:
    views = next((item[key] for key in VIEWPOINT_LIST_KEYS if key in item), None)
    if views is None and "target" in item:
        views = [item]  # one flat viewpoint instead of a list
    if isinstance(views, dict):
        views = [views]
    if not isinstance(views, list):
        raise AnswerError(f"no viewpoint list (expected {VIEWPOINT_LIST_KEYS[0]!r})")
    speaker = instance.extra["speaker"]
    result: list[Viewpoint] = []
    for view in views:
        if not isinstance(view, dict):
            continue
        target = first_text(view, ("target", "about"))
        text = first_text(view, VIEWPOINT_TEXT_KEYS)
        if target and text:
            # A missing source means the current speaker, as the authors read it.
            source = first_text(view, ("source", "holder")) or speaker
            result.append({"source": source, "target": target, "viewpoint": text})
    if not result:
        raise AnswerError("no viewpoint with both a target and a viewpoint")
    return result


TASK = register(ViewpointPrediction())
