"""Scoring that calls models or heavy libraries, above the model layer: the LLM judge (``judge``),
BERTScore (``bertscore``) and human-vs-judge agreement (``judge_agreement``). What each task is scored on is
the task's own declaration (``rescue.tasks.spec.JudgeRubric`` and ``TextScorer``); plain metric
functions stay in :mod:`rescue.metrics`."""

# Its face is its modules, each imported on use (BERTScore and the judge pull in heavy libraries).
__all__ = [
    "bertscore",
    "judge",
    "judge_agreement",
]
