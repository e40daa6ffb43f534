"""Turning a model's raw answer into JSON, labels and one prediction per instance.

Robust to what models really send: fenced JSON, prose around JSON, a bare item instead of a list,
labels in other case or spacing, unambiguous synonyms, echoed ids with a sample prefix. What cannot be
read is a recorded failure, never a silent default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from rescue.tasks.base import Instance, Prediction

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class AnswerParseError(ValueError):
    """The answer holds no usable JSON object."""


def extract_json(raw: str) -> dict[str, Any]:
    """The first JSON object in ``raw``: the whole text, a fenced block, or the first decodable ``{...}``."""
    if raw is None:
        raise AnswerParseError("empty answer")
    text = raw.strip()
    if not text:
        raise AnswerParseError("empty answer")
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
        if isinstance(value, dict):
            return value
        if isinstance(value, list):
            return {"predictions": value}
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return {"predictions": value}
    raise AnswerParseError("no JSON object found in the answer" + (" (truncated?)" if "{" in text else ""))


def answer_items(payload: dict[str, Any], item_key: str) -> list[dict[str, Any]]:
    """The list of per-instance items: ``payload["predictions"]``, or the payload itself when it is one item."""
    items = payload.get("predictions")
    if isinstance(items, dict):
        return [items]
    if isinstance(items, list):
        return [item for item in items if isinstance(item, dict)]
    if item_key in payload:
        return [payload]
    return []


# --- labels -------------------------------------------------------------------------------------------

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
# A model often echoes the label with its gloss: "pursue_withdraw (Pursue-withdraw)", "track: follows ...".
_GLOSS = re.compile(r"\s*(?:\(|:|\s-\s|\s—\s).*$", re.DOTALL)


class LabelError(ValueError):
    """An answer names a label outside the closed set (or none at all)."""


def label_key(text: str) -> str:
    """Case-, spacing- and punctuation-insensitive form of a label: ``"Pursue-Withdraw "`` -> ``"pursue_withdraw"``."""
    return _NON_ALNUM.sub("_", text.casefold()).strip("_")


def normalize_label(value: Any, labels: list[str], synonyms: dict[str, str] | None = None) -> str:
    """The member of ``labels`` that ``value`` names, or :class:`LabelError`.

    Matching ignores case, spacing, hyphens and underscores, then tries the unambiguous ``synonyms``
    (keys in any spelling, values canonical labels; synonyms of labels outside ``labels`` are ignored,
    so a synonym only ever maps inside the instance's own closed set), then the text before a gloss.
    """
    if not isinstance(value, str) or not value.strip():
        raise LabelError(f"expected a label, got {value!r}")
    table = {label_key(label): label for label in labels}
    for alias, canonical in (synonyms or {}).items():
        if canonical in labels:
            table.setdefault(label_key(alias), canonical)
    for text in (value, _GLOSS.sub("", value)):
        found = table.get(label_key(text))
        if found is not None:
            return found
    raise LabelError(f"unknown label {value.strip()!r:.80} (expected one of: {', '.join(labels)})")


def normalize_ranking(
    value: Any, labels: list[str], synonyms: dict[str, str] | None = None, *, k: int = 3,
    dropped: list[str] | None = None,
) -> list[str]:
    """A ranked list of at most ``k`` distinct labels, most likely first; never padded.

    Accepts a JSON list or a single string (one label, or labels separated by commas, semicolons or ``>``).
    Strict (``dropped`` None): any unknown entry makes the whole answer a parse failure. Lenient: unknown
    entries are left out and appended to ``dropped``, as the authors' scripts drop them; a ranking with no
    known label left is still a failure.
    """
    if isinstance(value, str):
        parts = [value] if _is_label(value, labels, synonyms) else re.split(r"[,;>]|\s+then\s+", value)
        value = [part for part in parts if part.strip()]
    if not isinstance(value, list):
        raise LabelError(f"expected a list of labels, got {type(value).__name__}")
    ranked: list[str] = []
    for entry in value:
        try:
            label = normalize_label(entry, labels, synonyms)
        except LabelError:
            if dropped is None:
                raise
            dropped.append(entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False))
            continue
        if label not in ranked:
            ranked.append(label)
    if not ranked:
        raise LabelError("empty ranking" + (f" (unknown labels dropped: {', '.join(dropped)})" if dropped else ""))
    return ranked[:k]


_WORD_RE = re.compile(r"[a-z]+")


def yes_no_from_prose(text: str) -> str | None:
    """A clear yes or no in prose ("Yes, the therapist should speak"): the text holds the word yes or the
    word no, not both; None when it holds neither or both."""
    words = set(_WORD_RE.findall(text.casefold()))
    found = {"yes", "no"} & words
    return found.pop() if len(found) == 1 else None


def _is_label(text: str, labels: list[str], synonyms: dict[str, str] | None) -> bool:
    try:
        normalize_label(text, labels, synonyms)
    except LabelError:
        return False
    return True


# --- matching answer items to instances ------------------------------------------------------------------

_ID_KEYS = ("id", "item_id", "turn_id", "candidate_id", "checkpoint_id", "instance_id")
_TRAILING_NUMBER = re.compile(r"(\d+)$")


def _id_key(text: str) -> str:
    return _NON_ALNUM.sub("", text.casefold())


def item_id(item: dict[str, Any]) -> str | None:
    """The id an answer item carries under any of the usual keys."""
    for key in _ID_KEYS:
        value = item.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def resolve_local_id(raw_id: str, local_ids: list[str]) -> str | None:
    """Which of ``local_ids`` an echoed id means: exact, with a sample prefix (``...#row7``, ``...__row7``),
    spelled differently (``Row 7``), or a bare number when exactly one local id ends with it."""
    keys = {_id_key(local): local for local in local_ids}
    for candidate in (raw_id, raw_id.rsplit("#", 1)[-1], raw_id.rsplit("__", 1)[-1]):
        found = keys.get(_id_key(candidate))
        if found is not None:
            return found
    if raw_id.strip().isdigit():
        hits = [local for local in local_ids if (m := _TRAILING_NUMBER.search(local)) and m.group(1) == raw_id.strip()]
        if len(hits) == 1:
            return hits[0]
    return None


def match_items(items: list[dict[str, Any]], local_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Answer items keyed by the local id they answer. The first item for an id wins.

    When the batch holds one instance and the answer one item, that item answers it even without a
    usable id: the authors' scripts do the same for single re-asks, and nothing else could be meant.
    """
    if len(local_ids) == 1 and len(items) == 1:
        return {local_ids[0]: items[0]}
    matched: dict[str, dict[str, Any]] = {}
    for item in items:
        raw_id = item_id(item)
        local = resolve_local_id(raw_id, local_ids) if raw_id is not None else None
        if local is not None and local not in matched:
            matched[local] = item
    return matched


# --- from a raw answer to one Prediction per instance -----------------------------------------------------


def local_id(instance: Instance) -> str:
    """The id the prompt shows for an instance: the part of ``instance_id`` after ``#``."""
    return instance.instance_id.rsplit("#", 1)[-1]


def first_present(item: dict[str, Any], keys: Sequence[str]) -> Any:
    """The value under the first of ``keys`` that ``item`` has; LabelError when it has none."""
    for key in keys:
        if key in item:
            return item[key]
    raise LabelError(f"the answer item has no {keys[0]!r} field")


def _keyed_items(payload: dict[str, Any], local_ids: list[str], value_key: str) -> dict[str, dict[str, Any]]:
    """Answers keyed by id instead of listed: ``{"row1": [...], "row2": [...]}``, also under ``predictions``.
    A dict value is the item itself; anything else is the value of ``value_key``."""
    nested = payload.get("predictions")
    mapping: dict[str, Any] = nested if isinstance(nested, dict) else payload
    matched: dict[str, dict[str, Any]] = {}
    for key, value in mapping.items():
        local = resolve_local_id(str(key), local_ids)
        if local is not None and local not in matched:
            matched[local] = value if isinstance(value, dict) else {value_key: value}
    return matched


Reader = Callable[[Any, Instance, "dict[str, Any] | None"], Any]


def parse_batch(
    raw: str | None,
    batch: list[Instance],
    value_keys: Sequence[str],
    read: Reader,
    policy: str = "strict",
) -> dict[str, Prediction]:
    """One Prediction per instance of ``batch``: ``read(value, instance, notes)`` on the item that answers it.

    No JSON at all: every instance is a ``parse_error``; no item for an instance: ``missing`` (the runner
    re-asks those singly); ``read`` raising :class:`LabelError`: a ``parse_error`` for that instance only.
    ``notes`` is None under the strict policy; under lenient it is a dict ``read`` records what it let
    through in (kept as the prediction's ``lenient``). The raw text is kept on every prediction.
    """
    try:
        payload = extract_json(raw)  # type: ignore[arg-type]
    except AnswerParseError as exc:
        return {i.instance_id: Prediction(i.instance_id, "parse_error", raw=raw, error=str(exc)) for i in batch}
    local_ids = [local_id(i) for i in batch]
    items: list[dict[str, Any]] = []
    for key in value_keys:
        items = answer_items(payload, key)
        if items:
            break
    matched = match_items(items, local_ids) or _keyed_items(payload, local_ids, value_keys[0])
    predictions = {}
    for instance in batch:
        item = matched.get(local_id(instance))
        if item is None:
            predictions[instance.instance_id] = Prediction(
                instance.instance_id, "missing", raw=raw, error=f"no answer for id {local_id(instance)!r}"
            )
            continue
        notes: dict[str, Any] | None = {} if policy == "lenient" else None
        try:
            value = read(first_present(item, value_keys), instance, notes)
        except LabelError as exc:
            predictions[instance.instance_id] = Prediction(instance.instance_id, "parse_error", raw=raw, error=str(exc))
            continue
        predictions[instance.instance_id] = Prediction(instance.instance_id, "ok", value=value, raw=raw,
                                                       lenient=notes or None)
    return predictions
