"""Turning a model's raw answer into JSON, labels and one prediction per instance: the one parse
pipeline of every task (:func:`parse_answer`), with one error type (:class:`AnswerError`).

Robust to what models really send: fenced JSON, prose around JSON, a bare item instead of a list,
labels in other case or spacing, unambiguous synonyms, echoed ids with a sample prefix. What cannot be
read is a recorded failure, never a silent default.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue.data.shapes import JsonObject  # open here: a model's answer, before each task's reader checks it
from rescue.data.answer_json import UnreadableJSON, find_json, unfence
from rescue.tasks.base import Instance, LenientNotes, Prediction
from rescue.errors import AnswerError as AnswerError



def extract_json(raw: str) -> JsonObject:
    """The first JSON object in ``raw`` (:func:`rescue.data.answer_json.find_json`): the whole text or a fenced
    block (a list is read as ``{"predictions": [...]}``), else the first decodable ``{...}`` (or list of
    objects) inside it."""
    if raw is None or not raw.strip():
        raise AnswerError("empty answer")
    try:
        found = find_json(raw, _object_or_list, _object_or_objects)
    except UnreadableJSON as exc:
        raise AnswerError(str(exc)) from None
    if not found.found:
        raise AnswerError("no JSON object found in the answer" + (" (truncated?)" if "{" in unfence(raw)[0] else ""))
    return found.value if isinstance(found.value, dict) else {"predictions": found.value}


def _object_or_list(value: Any) -> bool:
    return isinstance(value, (dict, list))


def _object_or_objects(value: Any) -> bool:
    return isinstance(value, dict) or (isinstance(value, list) and bool(value)
                                       and all(isinstance(v, dict) for v in value))


# Keys under which models put the item list ("predictions" is what every prompt asks for).
ITEM_LIST_KEYS = ("predictions", "checkpoints", "results", "items", "answers")


def answer_items(payload: JsonObject, flat_keys: Sequence[str]) -> list[JsonObject]:
    """The per-instance items: the first list (or single item) under :data:`ITEM_LIST_KEYS`, or the
    payload itself when it is one flat item (it holds one of ``flat_keys``)."""
    for key in ITEM_LIST_KEYS:
        items = payload.get(key)
        if isinstance(items, dict):
            return [items]
        if isinstance(items, list):
            return [item for item in items if isinstance(item, dict)]
    if any(key in payload for key in flat_keys):
        return [payload]
    return []


# --- labels -------------------------------------------------------------------------------------------

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
# A model often echoes the label with its gloss: "pursue_withdraw (Pursue-withdraw)", "track: follows ...".
_GLOSS = re.compile(r"\s*(?:\(|:|\s-\s|\s—\s).*$", re.DOTALL)


def label_key(text: str) -> str:
    """Case-, spacing- and punctuation-insensitive form of a label: ``"Pursue-Withdraw "`` -> ``"pursue_withdraw"``."""
    return _NON_ALNUM.sub("_", text.casefold()).strip("_")


@functools.lru_cache(maxsize=1024)
def _label_table(labels: tuple[str, ...], synonyms: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Every spelling key of a closed set and its synonyms -> the canonical label. Built once per set: a ranking
    answer reads up to a dozen labels against the same few sets (label_key ran 48 times per answer)."""
    table = {label_key(label): label for label in labels}
    for alias, canonical in synonyms:
        if canonical in labels:
            table.setdefault(label_key(alias), canonical)
    return table


def normalize_label(value: Any, labels: list[str], synonyms: Mapping[str, str] | None = None) -> str:
    """The member of ``labels`` that ``value`` names, or :class:`AnswerError`.

    Matching ignores case, spacing, hyphens and underscores, then tries the unambiguous ``synonyms``
    (keys in any spelling, values canonical labels; synonyms of labels outside ``labels`` are ignored,
    so a synonym only ever maps inside the instance's own closed set), then the text before a gloss.
    """
    if not isinstance(value, str) or not value.strip():
        raise AnswerError(f"expected a label, got {value!r}")
    table = _label_table(tuple(labels), tuple(synonyms.items()) if synonyms else ())
    for text in (value, _GLOSS.sub("", value)):
        found = table.get(label_key(text))
        if found is not None:
            return found
    raise AnswerError(f"unknown label {value.strip()!r:.80} (expected one of: {', '.join(labels)})")


def normalize_ranking(
    value: Any, labels: list[str], synonyms: Mapping[str, str] | None = None, *, k: int = 3,
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
        raise AnswerError(f"expected a list of labels, got {type(value).__name__}")
    ranked: list[str] = []
    for entry in value:
        try:
            label = normalize_label(entry, labels, synonyms)
        except AnswerError:
            if dropped is None:
                raise
            dropped.append(entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False))
            continue
        if label not in ranked:
            ranked.append(label)
    if not ranked:
        raise AnswerError("empty ranking" + (f" (unknown labels dropped: {', '.join(dropped)})" if dropped else ""))
    return ranked[:k]


_WORD_RE = re.compile(r"[a-z]+")


def yes_no_from_prose(text: str) -> str | None:
    """A clear yes or no in prose ("Yes, the therapist should speak"): the text holds the word yes or the
    word no, not both; None when it holds neither or both."""
    words = set(_WORD_RE.findall(text.casefold()))
    found = {"yes", "no"} & words
    return found.pop() if len(found) == 1 else None


def _is_label(text: str, labels: list[str], synonyms: Mapping[str, str] | None) -> bool:
    try:
        normalize_label(text, labels, synonyms)
    except AnswerError:
        return False
    return True


# --- matching answer items to instances ------------------------------------------------------------------

_ID_KEYS = ("id", "item_id", "turn_id", "candidate_id", "checkpoint_id", "instance_id")
_TRAILING_NUMBER = re.compile(r"(\d+)$")


def _id_key(text: str) -> str:
    return _NON_ALNUM.sub("", text.casefold())


def item_id(item: JsonObject) -> str | None:
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


def match_items(items: list[JsonObject], local_ids: list[str]) -> dict[str, JsonObject]:
    """Answer items keyed by the local id they answer. The first item for an id wins.

    When the batch holds one instance and the answer one item, that item answers it even without a
    usable id: the authors' scripts do the same for single re-asks, and nothing else could be meant.
    """
    if len(local_ids) == 1 and len(items) == 1:
        return {local_ids[0]: items[0]}
    matched: dict[str, JsonObject] = {}
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


def _fields(item: JsonObject, keys: Sequence[str]) -> Iterator[Any]:
    return (item[key] for key in keys if key in item)


def first_present(item: JsonObject, keys: Sequence[str]) -> Any:
    """The value under the first of ``keys`` that ``item`` has; AnswerError when it has none."""
    for value in _fields(item, keys):
        return value
    raise AnswerError(f"the answer item has no {keys[0]!r} field")


def first_text(item: JsonObject, keys: Sequence[str]) -> str:
    """The first non-empty text under ``keys`` ("" when none); a list of strings is joined with commas."""
    for value in _fields(item, keys):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = ", ".join(v.strip() for v in value if v.strip())
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return ""


def _keyed_items(payload: JsonObject, local_ids: list[str], value_key: str) -> dict[str, JsonObject]:
    """Answers keyed by id instead of listed: ``{"row1": [...], "row2": [...]}``, also under ``predictions``.
    A dict value is the item itself; anything else is the value of ``value_key``."""
    nested = payload.get("predictions")
    mapping: JsonObject = nested if isinstance(nested, dict) else payload
    matched: dict[str, JsonObject] = {}
    for key, value in mapping.items():
        local = resolve_local_id(str(key), local_ids)
        if local is not None and local not in matched:
            matched[local] = value if isinstance(value, dict) else {value_key: value}
    return matched


@dataclass(frozen=True)
class Matching:
    """Which fallbacks match answer items to instances besides their ids (see :func:`match_answer`).

    ``keyed``: answers keyed by id (``{"row1": [...]}``, also under ``predictions``), the value being
    the item or its ``flat_keys[0]``. ``unlabelled``: when no item carries an id at all, an echoed
    ``row_index``, else the order of the items when there are as many as instances.
    """

    keyed: bool = False
    unlabelled: bool = False


def match_answer(payload: JsonObject, items: list[JsonObject], batch: list[Instance],
                 flat_keys: Sequence[str], matching: Matching) -> dict[str, JsonObject]:
    """Answer items keyed by the local id they answer (ids first; then the fallbacks ``matching`` allows)."""
    local_ids = [local_id(i) for i in batch]
    matched = match_items(items, local_ids)
    if not matched and matching.keyed:
        matched = _keyed_items(payload, local_ids, flat_keys[0])
    if not matched and matching.unlabelled and items and all(item_id(item) is None for item in items):
        by_row = [resolve_local_id(str(item.get("row_index", "")), local_ids) for item in items]
        if all(by_row):
            # the first item wins (every local is set here: `if local` only tells the type checker so)
            matched = {local: item for local, item in reversed(list(zip(by_row, items))) if local}
        elif len(items) == len(batch):
            matched = dict(zip(local_ids, items))
    return matched


Reader = Callable[[JsonObject, Instance, "LenientNotes | None"], Any]


def parse_answer(
    raw: str | None,
    batch: list[Instance],
    flat_keys: Sequence[str],
    read: Reader,
    policy: str = "strict",
    matching: Matching = Matching(),
) -> dict[str, Prediction]:
    """One Prediction per instance of ``batch``: ``read(item, instance, notes)`` on the item that answers it.

    No JSON at all: every instance is a ``parse_error``; no item for an instance: ``missing`` (the runner
    re-asks those singly); ``read`` raising :class:`AnswerError`: a ``parse_error`` for that instance only.
    ``notes`` is None under the strict policy; under lenient it is a dict ``read`` records what it let
    through in (kept as the prediction's ``lenient``). The raw text is kept on every prediction.
    """
    try:
        payload = extract_json(raw)  # type: ignore[arg-type]
    except AnswerError as exc:
        return {i.instance_id: Prediction(i.instance_id, "parse_error", raw=raw, error=str(exc)) for i in batch}
    matched = match_answer(payload, answer_items(payload, flat_keys), batch, flat_keys, matching)
    predictions = {}
    for instance in batch:
        local = local_id(instance)
        item = matched.get(local)
        if item is None:
            predictions[instance.instance_id] = Prediction(instance.instance_id, "missing", raw=raw,
                                                           error=f"no answer for id {local!r}")
            continue
        notes: LenientNotes | None = {} if policy == "lenient" else None
        try:
            value = read(item, instance, notes)
        except AnswerError as exc:
            predictions[instance.instance_id] = Prediction(instance.instance_id, "parse_error", raw=raw,
                                                           error=f"{local}: {exc}")
            continue
        predictions[instance.instance_id] = Prediction(instance.instance_id, "ok", value=value, raw=raw,
                                                       lenient=notes or None)
    return predictions
