"""The files and batches routes of one OpenAI-compatible endpoint, every answer read as untrusted input.

Sent through the ``openai`` package's public client (imported only when a batch runs); what it answers is read
as bytes and checked here, the library's parsed objects never used (issue 47 item 3: the hand-written layer
over httpx did not pass the bar for keeping a rewrite, benchmarks/README.md).

A transport failure, a 5xx or 429, and a 200 whose body is not what the route answers (not JSON, a list, no
``id``) are all a :class:`TransientError`: for ``POST /files`` and ``POST /batches`` they are *ambiguous* (the
file or batch may exist all the same), so the caller never simply sends them again (rescue.llm._batch lists
first). Another 4xx is a :class:`BatchError`: the endpoint refused, nothing was made. Numbers of more digits
than any count holds are read as absent (Python refuses ``int()`` past 4,300 digits).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypeVar, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, WrapValidator

from rescue.errors import BatchError, TransientError
from rescue.llm import _secrets as secrets
from rescue.llm._client import ERROR_CHARS, OpenAIModel, _error_message
from rescue.llm._providers import tls_context

NUMBER_DIGITS = 30  # no count, size or time has more digits
PAGE = 100  # batches or files asked per page of a list
# A batch or file id: letters, digits and ``_-.:``, starting with a letter or digit, in at most four segments
# joined by ``/`` (resource names such as ``batches/abc``), 256 characters in all. No segment can be ``.``, ``..``
# or hold ``%``, a space or a control character, so no id reaches another route than the one asked (the openai
# client sends each id as one segment, its ``/`` escaped: id_path shows the path it asks).
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*(?:/[A-Za-z0-9][A-Za-z0-9_.:-]*){0,3}")
MAX_ID = 256


def is_id(value: object) -> bool:
    """Whether ``value`` is a batch or file id rescue puts in a URL (:data:`ID_PATTERN`)."""
    return isinstance(value, str) and len(value) <= MAX_ID and ID_PATTERN.fullmatch(value) is not None


def shown_id(value: object) -> str:
    """``value`` as a message may show it: its ``repr``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _checked_id(value: str) -> str:
    if not is_id(value):
        raise ValueError(f"not a batch or file id ({shown_id(value)})")
    return value


Id = Annotated[str, AfterValidator(_checked_id)]


def id_path(route: str, identifier: str, *rest: str) -> str:
    """``route/ID[/rest]`` with ``identifier`` checked (:func:`is_id`), escaped as the ``openai`` client sends it
    (one path segment: the ``/`` of a resource name as ``%2F``); raises :class:`BatchError` for what is no id."""
    from urllib.parse import quote

    if not is_id(identifier):
        raise BatchError(f"{shown_id(identifier)} is not a batch or file id; not sent")
    return "/".join([route, quote(identifier, safe=":"), *rest])


def _bounded_int(text: str) -> int | None:
    return int(text) if len(text.lstrip("-")) <= NUMBER_DIGITS else None


def loads(raw: bytes) -> Any:
    """JSON sent by a batch API; ValueError (with the reason) when it is not UTF-8 JSON one can read."""
    try:
        return json.loads(raw.decode("utf-8"), parse_int=_bounded_int)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start + 1})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at character {exc.pos + 1})") from None


def _or_none(value: Any, handler: Any) -> Any:
    # Fields only shown (progress counts, metadata of batches not ours): an unreadable one is simply unknown.
    try:
        return handler(value)
    except ValidationError:
        return None


Count = Annotated[int | None, Field(ge=0), WrapValidator(_or_none)]


class Counts(BaseModel):
    """``request_counts`` of a batch: shown as progress, never trusted for anything else."""

    model_config = ConfigDict(strict=True)
    total: Count = None
    completed: Count = None
    failed: Count = None


class BatchObject(BaseModel):
    """The fields of a batch object rescue acts on; the rest of it is ignored."""

    model_config = ConfigDict(strict=True)
    id: Id
    status: str = Field(min_length=1)
    input_file_id: Annotated[Id | None, WrapValidator(_or_none)] = None
    output_file_id: Id | None = None
    error_file_id: Id | None = None
    created_at: Annotated[int | float | None, WrapValidator(_or_none)] = None
    metadata: Annotated[dict[str, str] | None, WrapValidator(_or_none)] = None
    request_counts: Annotated[Counts | None, WrapValidator(_or_none)] = None


class FileObject(BaseModel):
    """An uploaded file as the files list shows it."""

    model_config = ConfigDict(strict=True)
    id: Id
    filename: Annotated[str | None, WrapValidator(_or_none)] = None
    bytes: Annotated[int | None, WrapValidator(_or_none)] = None
    created_at: Annotated[int | float | None, WrapValidator(_or_none)] = None


class Page(BaseModel):
    """One page of a list route; items that are not objects are kept for the caller to pass over."""

    model_config = ConfigDict(strict=True)
    data: list[Any]
    has_more: bool = False
    last_id: Annotated[str | None, WrapValidator(_or_none)] = None


def _where(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the answer"
    return f"{where}: {first['msg']}"


T = TypeVar("T", bound=BaseModel)


def parse(kind: type[T], data: Any, what: str) -> T:
    """``data`` read as ``kind``; a :class:`TransientError` naming the field when it is not one."""
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        raise TransientError("bad_response", f"{what}: {_where(exc)}") from None


class BatchEndpoint:
    """The files and batches routes of one OpenAI-compatible endpoint, with the model's key and timeout, asked
    through the ``openai`` package's public client (``with_raw_response`` and ``with_streaming_response``): its
    answers are read as bytes and checked by rescue (:func:`loads`, :func:`parse`), never taken from its parsed
    objects. It never retries (``max_retries=0``: upload and create are not idempotent) and follows no redirect."""

    def __init__(self, model: OpenAIModel):
        import httpx
        import openai

        self.model = model
        endpoint = model.endpoint
        # rescue's own HTTP client, as every other one of the process: its certificates (tls_context), no redirect
        # followed, and the environment's proxy (HTTPS_PROXY, NO_PROXY) as httpx reads it, the key a header of each
        # request only (a proxy sees it only where it sees the request: http://, as on the online path).
        self.http = httpx.AsyncClient(timeout=model.settings.timeout, verify=tls_context())
        # openai 3 is annotated with httpx2's AsyncClient and takes httpx's too (its check names both); openai 1 and 2
        # are httpx's own.
        self.client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key,
                                         timeout=model.settings.timeout, max_retries=0,
                                         http_client=cast(Any, self.http))
        # Each request carries this endpoint's key and nothing the client takes from the environment for OpenAI
        # (OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS): they are not for another provider.
        custom = os.environ.get("OPENAI_CUSTOM_HEADERS") or ""
        self.headers: dict[str, str | openai.Omit] = {
            **{line.split(":", 1)[0].strip(): openai.Omit() for line in custom.splitlines() if ":" in line},
            "OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit(),
            "Authorization": f"Bearer {endpoint.api_key}"}

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.close()
        await self.http.aclose()

    def _check(self, method: str, path: str, status: int, body: bytes) -> None:
        if status >= 500 or status == 429:
            raise TransientError("server_error", f"HTTP {status} from {method} {path}")
        if status != 200:
            message = secrets.clip(_error_message(status, body), ERROR_CHARS)
            raise BatchError(f"{self.model.name}: the batch API refused {method} {path} (HTTP {status}): {message}")

    @staticmethod
    def _lost(exc: BaseException) -> TransientError:
        # The library's connection error says "Connection error."; its cause (httpx's) says what happened.
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        return TransientError("connection", secrets.clip(f"{type(cause).__name__}: {cause}", ERROR_CHARS))

    async def _json(self, method: str, path: str, send: Callable[[], Awaitable[Any]]) -> Any:
        """What ``send`` (one ``with_raw_response`` call) answered, its bytes read with :func:`loads`."""
        import httpx
        import openai

        try:
            response = await send()
        except openai.APIStatusError as exc:  # not 2xx (redirects included: none is followed)
            self._check(method, path, exc.status_code, exc.response.content)
            raise TransientError("bad_response", f"{method} {path} answered HTTP {exc.status_code}") from None
        except (openai.APIConnectionError, httpx.HTTPError) as exc:  # timeouts included
            raise self._lost(exc) from None
        content: bytes = response.content
        self._check(method, path, response.status_code, content)
        try:
            return loads(content)
        except ValueError as exc:
            raise TransientError("bad_response", f"{method} {path} answered {exc}") from None

    async def upload(self, content: bytes, filename: str) -> str:
        """Upload a JSONL file of requests for a batch; its file id."""
        data = await self._json("POST", "files", lambda: self.client.files.with_raw_response.create(
            file=(filename, content, "application/jsonl"), purpose="batch", extra_headers=self.headers))
        return parse(FileObject, data, "the uploaded file").id

    async def create(self, file_id: str, metadata: dict[str, str]) -> BatchObject:
        """Start a batch over an uploaded file (24 h window), tagged with ``metadata``; the batch object."""
        data = await self._json("POST", "batches", lambda: self.client.batches.with_raw_response.create(
            input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h", metadata=metadata,
            extra_headers=self.headers))
        return parse(BatchObject, data, "the created batch")

    async def status(self, batch_id: str) -> BatchObject:
        """The batch object as the endpoint reports it now."""
        path = id_path("batches", batch_id)
        data = await self._json("GET", path, lambda: self.client.batches.with_raw_response.retrieve(
            batch_id, extra_headers=self.headers))
        return parse(BatchObject, data, f"batch {batch_id}")

    async def page(self, route: str, after: str | None) -> Page:
        """One page (newest first) of ``batches`` or ``files`` (those of purpose ``batch``)."""
        cursor: dict[str, Any] = {"after": after} if after else {}
        if route == "files":
            data = await self._json("GET", route, lambda: self.client.files.with_raw_response.list(
                purpose="batch", limit=PAGE, extra_headers=self.headers, **cursor))
        else:
            data = await self._json("GET", route, lambda: self.client.batches.with_raw_response.list(
                limit=PAGE, extra_headers=self.headers, **cursor))
        return parse(Page, data, f"the list of {route}")

    async def content(self, file_id: str) -> AsyncIterator[bytes]:
        """The bytes of a file (a finished batch's output or errors) as they arrive."""
        import httpx
        import openai

        path = id_path("files", file_id, "content")
        try:
            async with self.client.files.with_streaming_response.content(
                    file_id, extra_headers=self.headers) as response:
                if response.status_code != 200:
                    self._check("GET", path, response.status_code, await response.read())
                async for chunk in response.iter_bytes():
                    yield chunk
        except openai.APIStatusError as exc:
            self._check("GET", path, exc.status_code, exc.response.content)
            raise TransientError("bad_response", f"GET {path} answered HTTP {exc.status_code}") from None
        except (openai.APIConnectionError, httpx.HTTPError) as exc:
            raise self._lost(exc) from None


__all__ = ["ID_PATTERN", "BatchEndpoint", "BatchObject", "Counts", "FileObject", "Id", "Page", "id_path", "is_id",
           "loads", "parse", "shown_id"]
