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

from typing import Any, ClassVar

from rescue.data.models import GROUP_LABELS, Row, Sample
from rescue.tasks import generative as gen
from rescue.tasks.base import Instance, Prediction, PredictionRecord, RenderOptions
from rescue.tasks.render import dumps

VIEWPOINT_LIST_KEYS = ("viewpoints", "predicted_viewpoints", "viewpoints_attitudes")
VIEWPOINT_TEXT_KEYS = ("viewpoint", "view", "predicted_viewpoint", "description")

SCORE_FLOORS: dict[str, float] = {
    "pair_recall": 0.0,
    "judge": 1.0,  # judge rubric 1-5, as the paper reports VP
    # The authors' VP rubric (rescue.metrics.judge, scale "authors"): pairing 0-2 + viewpoint 0-4 = total 0-6.
    "judge_source_target": 0.0,
    "judge_viewpoint": 0.0,
    "judge_total": 0.0,
    "bertscore_f1": 0.0,
}


def viewpoint_gold(row: Row) -> list[dict[str, str]]:
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


def viewpoint_rows(sample: Sample) -> list[tuple[Row, list[dict[str, str]]]]:
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
    names: list[str] = []
    candidates = [*sample.participants]
    for row in sample.rows:
        candidates.append(row.speaker)
        candidates.extend(row.target)
    for name in candidates:
        name = name.strip()
        if name and name not in GROUP_LABELS.values() and name not in names:
            names.append(name)
    return names


class ViewpointPrediction:
    name: ClassVar[str] = "vp"
    title: ClassVar[str] = "Viewpoint Prediction"
    default_context_size: ClassVar[int] = 3
    default_batch_size: ClassVar[int] = 0  # the authors send a whole sample per request
    max_tokens: ClassVar[int] = 2200
    checkpoints_per_sample: ClassVar[int] = 5

    def build(
        self, samples: list[Sample], *, checkpoints_per_sample: int | None = None, **_other_tasks_options: Any
    ) -> list[Instance]:
        limit = self.checkpoints_per_sample if checkpoints_per_sample is None else checkpoints_per_sample
        instances: list[Instance] = []
        for sample in samples:
            people = participants(sample)
            for row, gold in gen.pick_evenly(viewpoint_rows(sample), limit, key=lambda pair: pair[0].row_index):
                instances.append(gen.make_instance(self.name, sample, row, gold, participants=people))
        return instances

    def render(self, batch: list[Instance], options: RenderOptions) -> list[dict[str, str]]:
        k = gen.resolve_context_size(options, self.default_context_size)
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
            gen.context_sentence(k, "use it only to resolve who is meant; the current turn is the main evidence."),
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
        people = participants(sample) if sample else []
        records = gen.checkpoint_records(batch, options.mode, k, participants=people)
        return gen.user_prompt(lines, batch, options.mode, schema, records)

    def parse(self, raw: str, batch: list[Instance]) -> dict[str, Prediction]:
        return gen.parse_answer(raw, batch, VIEWPOINT_LIST_KEYS + ("target",), _normalise)

    def format_answer(self, batch: list[Instance], values: dict[str, Any]) -> str:
        items = [
            {
                "checkpoint_id": gen.local_id(i),
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
        if not record.ok:
            return {"pair_recall": SCORE_FLOORS["pair_recall"]}
        return {"pair_recall": pair_recall(record.gold, record.prediction)}

    def aggregate(self, records: list[PredictionRecord]) -> dict[str, float | int | None]:
        result = gen.aggregate_scores(records, SCORE_FLOORS)
        per_instance = [self.instance_scores(r)["pair_recall"] or 0.0 for r in records]
        result["pair_recall"] = sum(per_instance) / len(per_instance) if per_instance else None
        result.pop("pair_recall_unscored", None)
        return result


def _pair(view: dict[str, Any]) -> tuple[str, str]:
    return (str(view.get("source", "")).strip().casefold(), str(view.get("target", "")).strip().casefold())


def pair_recall(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> float:
    """Share of the gold (source, target) pairs that the prediction names, ignoring case."""
    wanted = {_pair(v) for v in gold}
    if not wanted:
        return 0.0
    return len(wanted & {_pair(v) for v in predicted}) / len(wanted)


def _normalise(item: dict[str, Any], instance: Instance) -> list[dict[str, str]]:
    views = next((item[key] for key in VIEWPOINT_LIST_KEYS if key in item), None)
    if views is None and "target" in item:
        views = [item]  # one flat viewpoint instead of a list
    if isinstance(views, dict):
        views = [views]
    if not isinstance(views, list):
        raise ValueError(  # noqa: TRY004 -- parse_answer turns ValueError into a recorded parse_error
            f"no viewpoint list (expected {VIEWPOINT_LIST_KEYS[0]!r})")
    speaker = instance.extra["speaker"]
    result = []
    for view in views:
        if not isinstance(view, dict):
            continue
        target = gen.first_text(view, ("target", "about"))
        text = gen.first_text(view, VIEWPOINT_TEXT_KEYS)
        if target and text:
            # A missing source means the current speaker, as the authors read it.
            source = gen.first_text(view, ("source", "holder")) or speaker
            result.append({"source": source, "target": target, "viewpoint": text})
    if not result:
        raise ValueError("no viewpoint with both a target and a viewpoint")
    return result


TASK = ViewpointPrediction()
