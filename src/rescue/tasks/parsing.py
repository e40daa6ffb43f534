"""Turning a model's raw answer into JSON and matching answer items to instances.

Robust to what models really send: fenced JSON, prose around JSON, a bare item instead of a list.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
