"""Shapes that cross layers as plain dicts: a chat message in the API's own form, and open JSON.

They live on the ground floor because the tasks render messages and the model layer sends them, and neither
may import the other.
"""

from __future__ import annotations

from typing import Any, TypedDict

JsonObject = dict[str, Any]
"""A JSON object whose keys rescue does not fix: a provider's answer before it is checked, a request body with a
provider's extras, a user's file. Where rescue fixes the keys, a TypedDict or a model says them instead."""


class ChatMessage(TypedDict):
    """One chat message in the API's own form with text content: what a task's ``render`` gives (a video or
    an image is added by the model layer's :class:`rescue.llm.Message`)."""

    role: str
    content: str
