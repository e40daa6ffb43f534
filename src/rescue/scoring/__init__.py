"""Scoring that calls models or heavy libraries, above the model layer: the LLM judge (``judge``),
BERTScore (``bertscore``) and human-vs-judge agreement (``agreement``). What each task is scored on is
the task's own declaration (``rescue.tasks.spec.JudgeRubric`` and ``TextScorer``); plain metric
functions stay in :mod:`rescue.metrics`."""
