"""A submission bundle: one zip file that holds a run as it was answered, for anyone to re-derive and verify.

Format (``BUNDLE_SCHEMA`` 1; docs/submissions.md holds the full description):

- ``manifest.json``: what was run and by whom (:class:`Manifest`): the bundle schema and rescue version, the
  data's SHA-256, each task's instance count, instance-id digest and prompt digest, every system (configured
  name, the names the provider answered as, decoding settings, requests, tokens and cost), the judges and the
  BERTScore backbone, the run's state (complete, rescored, limited to some samples), the submitter's
  declarations, and the SHA-256 and size of every other member;
- ``results.json`` and ``predictions.jsonl``: the run directory's own files, byte for byte;
- ``answers.jsonl``: every answer the run's models and judges gave, as received and cached (one line each: the
  request's digest, who answered and for what, the text, the finish reason, the usage);
- ``intervals.json``: every leaderboard cell (system, scope, column) with its 95% interval, as ``rescue report``
  computes them from the records;
- ``human.json``, only in a people's run: who was given and who answered what, so that each person's cells are
  on the instances they answered (coverage, never a wrong answer), as the report reads it.

The manifest is the table of contents: a member it does not list, or a member whose bytes do not hash to what
it lists, is refused by :func:`read_bundle` before anything is parsed. No key or secret enters a bundle:
:func:`write_bundle` refuses one whose members hold the value of a key variable of the environment.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue.archives import ArchiveLimits, check_zip
from rescue.atomic import write_atomic
from rescue.data import readback
from rescue.errors import ArchiveError, BundleError
from rescue.runs.folder import read_predictions
from rescue.runs.results import PREDICTIONS, RESULTS, RunResults
from rescue.tasks.base import PredictionRecord

BUNDLE_SCHEMA = 1
MANIFEST = "manifest.json"
ANSWERS = "answers.jsonl"
INTERVALS = "intervals.json"
PEOPLE = "human.json"  # a people's run: who answered what (rescue review export --as-run writes it beside the run)
MEMBERS = (MANIFEST, RESULTS, PREDICTIONS, ANSWERS, INTERVALS, PEOPLE)  # every name a bundle may hold, in this order
HUMAN_PREFIX = "human/"
BASELINE_PREFIX = "baseline/"
SHA256 = re.compile(r"[0-9a-f]{64}")
MiB = 1 << 20
# A bundle of the full release with every task, a judge and reasoning kept is tens of MB; these bound what a
# hostile one can cost (memory and time) while leaving room for ten times the release.
# More entries than members are allowed here so that a stray entry is refused by its name, not only by a count.
LIMITS = ArchiveLimits(entries=64, member_bytes=1024 * MiB, total_bytes=2048 * MiB)
# Environment variables whose values are secrets: a key, token, secret or password by name.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)S?$", re.IGNORECASE)
_MIN_SECRET = 16  # shorter values are too likely to be ordinary text (as rescue.llm's masking holds)


class FileEntry(BaseModel):
    """One member's SHA-256 (lowercase hex) and size in bytes."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=SHA256.pattern)
    bytes: int = Field(ge=0)


class TaskFacts(BaseModel):
    """One task as the run built and rendered it: its instances and the digests a verifier recomputes."""

    model_config = ConfigDict(extra="forbid")

    instances: int = Field(ge=0)
    instance_ids_sha256: str = Field(pattern=SHA256.pattern)  # of the instance ids in build order, one per line
    prompt_sha256: str = Field(pattern=SHA256.pattern)  # of every request's messages, in the run's batch order


class SystemFacts(BaseModel):
    """One system of the run: a model, an offline baseline or a person (``human/NAME``)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["model", "baseline", "human"]
    configured: str  # the name the run was given (``--model``)
    answered_as: list[str] = Field(default_factory=list)  # the model names the provider's answers carried
    settings: dict[str, Any] = Field(default_factory=dict)  # decoding settings as the run recorded them
    tasks: list[str] = Field(default_factory=list)
    requests: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    answers: int = Field(default=0, ge=0)  # lines of answers.jsonl that are this system's


class Declarations(BaseModel):
    """What the submitter declares; rescue records it and cannot check it."""

    model_config = ConfigDict(extra="forbid")

    submitter: str = Field(default="", max_length=500)
    training_data: str = Field(default="", max_length=5000)  # what the model was trained or tuned on, as known
    zero_shot: bool | None = None  # True: no RESCUE-Bench data, prompt or answer was used to make the model
    notes: str = Field(default="", max_length=5000)


class RunState(BaseModel):
    """Whether the run is whole: a bundle of a partial, re-scored or sample-limited run says so."""

    model_config = ConfigDict(extra="forbid")

    complete: bool
    rescored: bool  # the results were re-derived by `rescue rescore` (re-parsed, perhaps under another policy)
    parse: str = "strict"  # the parse policy the answers were read with (--parse)
    limited: bool  # only part of the data: some samples (--limit-samples, --split) or instances (--limit)
    mixed: bool  # systems that do not cover the same instances
    run_id: str | None = None
    elapsed_s: float | None = Field(default=None, allow_inf_nan=False)


class Manifest(BaseModel):
    """``manifest.json``: every fact of the bundle a verifier checks or a leaderboard shows."""

    model_config = ConfigDict(extra="forbid")

    bundle_schema: int
    rescue_version: str
    created: str  # ISO 8601, UTC
    data_sha256: str = Field(pattern=SHA256.pattern)
    samples: int = Field(ge=0)
    mode: str
    tasks: dict[str, TaskFacts]
    systems: dict[str, SystemFacts]
    judges: list[str] = Field(default_factory=list)
    judge: dict[str, Any] = Field(default_factory=dict)  # scale, repeats, prompt digests
    bertscore: dict[str, Any] | None = None  # the backbone's description; None when BERTScore was off
    thinking: str | None = None
    state: RunState
    declarations: Declarations = Field(default_factory=Declarations)
    files: dict[str, FileEntry]


@dataclass
class Bundle:
    """A bundle read and checked: its manifest and the bytes of every other member, whose hashes matched."""

    path: Path
    manifest: Manifest
    members: dict[str, bytes]

    def text(self, name: str) -> str:
        """A member as text (checked as UTF-8 by :func:`read_bundle`)."""
        return self.members[name].decode("utf-8")


def sha256_bytes(data: bytes) -> str:
    """The SHA-256 of ``data``, lowercase hex."""
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same value always gives the same text (and digest)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def system_kind(name: str) -> Literal["model", "baseline", "human"]:
    """Whether a system of a run is an offline baseline, a person (or the pooled people), or a model."""
    if name.startswith(BASELINE_PREFIX):
        return "baseline"
    if name.startswith(HUMAN_PREFIX):
        return "human"
    return "model"


# --- writing ---------------------------------------------------------------------------------------------


def environment_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variable name -> value of every variable that holds a secret by its name (``*_API_KEY``, ``*_TOKEN``...)
    and is long enough to look for (``.env`` is read into the environment by the CLI before a command runs)."""
    env = os.environ if environ is None else environ
    return {name: value.strip() for name, value in env.items()
            if _SECRET_NAME.search(name) and len(value.strip()) >= _MIN_SECRET}


def find_secret(members: Mapping[str, bytes], secrets: Mapping[str, str]) -> str | None:
    """Where the first secret value occurs (``member:line: the value of $NAME``), None when none does."""
    for member, data in members.items():
        for name, value in secrets.items():
            needle = value.encode("utf-8")
            at = data.find(needle)
            if at >= 0:
                line = data.count(b"\n", 0, at) + 1
                return f"{member}:{line}: the value of ${name}"
    return None


def zip_members(members: Mapping[str, bytes]) -> bytes:
    """The bundle's bytes: the members in :data:`MEMBERS` order, deflated, with fixed dates so that the same
    members always make the same file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for name in MEMBERS:
            if name in members:
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, members[name])
    return buffer.getvalue()


def manifest_bytes(manifest: Manifest) -> bytes:
    """``manifest.json`` as written: indented, keys in the model's order, UTF-8."""
    return (json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_bundle(out: str | Path, manifest: Manifest, members: Mapping[str, bytes]) -> Path:
    """Write the bundle to ``out`` (whole or not at all) after the secret scan; ``manifest.files`` is filled
    from ``members`` here, so the table of contents always matches what is written."""
    found = find_secret(members, environment_secrets())
    if found:
        raise BundleError(f"{found} is in the run's files; a bundle never holds a key. Nothing was written: "
                          "remove it from the run (rescue never writes configured keys: check what wrote it)")
    manifest.files = {name: FileEntry(sha256=sha256_bytes(data), bytes=len(data))
                      for name, data in members.items() if name != MANIFEST}
    data = zip_members({MANIFEST: manifest_bytes(manifest), **members})
    target = Path(out)
    write_atomic(target, data)
    return target


def now_iso() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


# --- reading: a bundle is hostile input ------------------------------------------------------------------


def parse_json(text: str, where: str) -> Any:
    """One JSON value of a bundle, read as every file rescue reads back is (:mod:`rescue.data.readback`: bounded
    depth, no NaN or Infinity, numbers of sane size); BundleError naming ``where`` (member and line) otherwise."""
    return readback.parse_json(text, where, BundleError)


def _member_names(archive: zipfile.ZipFile, path: Path) -> list[str]:
    names = [info.filename for info in archive.infolist()]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise BundleError(f"{path}: entry {name!r} appears twice; a bundle holds each member once")
        seen.add(name)
        if name not in MEMBERS:
            raise BundleError(f"{path}: entry {name!r} is not a member of a bundle (allowed: {', '.join(MEMBERS)})")
    for info in archive.infolist():
        if info.is_dir() or (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):
            raise BundleError(f"{path}: entry {info.filename!r} is not a regular file (a link or a folder)")
    if MANIFEST not in seen:
        raise BundleError(f"{path}: no {MANIFEST}; not a bundle written by `rescue submit`")
    return names


def _read_manifest(path: Path, data: bytes) -> Manifest:
    where = f"{path}:{MANIFEST}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{where}: not UTF-8 text") from None
    value = parse_json(text, where)
    if isinstance(value, dict) and isinstance(value.get("bundle_schema"), int) and value["bundle_schema"] > BUNDLE_SCHEMA:
        raise BundleError(f"{where}: field bundle_schema: {value['bundle_schema']} is newer than this rescue reads "
                          f"({BUNDLE_SCHEMA}); upgrade rescue")
    manifest = readback.validated(Manifest, value, where, BundleError)
    if manifest.bundle_schema != BUNDLE_SCHEMA:
        raise BundleError(f"{where}: field bundle_schema: {manifest.bundle_schema} is not a schema this rescue "
                          f"reads ({BUNDLE_SCHEMA})")
    return manifest


def _check_member(file: Path, manifest: Manifest, name: str, data: bytes | None) -> None:
    """A member is listed exactly when present, hashes to what is listed, and is UTF-8 text."""
    listed = manifest.files.get(name)
    if listed is None and data is not None:
        raise BundleError(f"{file}:{MANIFEST}: field files: {name} is in the bundle but not listed")
    if listed is not None and data is None:
        raise BundleError(f"{file}: {name} is listed in {MANIFEST} but missing")
    if listed is None or data is None:
        return
    if len(data) != listed.bytes or sha256_bytes(data) != listed.sha256:
        raise BundleError(f"{file}:{name}: its SHA-256 is not the one {MANIFEST} lists (files.{name}.sha256): "
                          "the member was changed after the bundle was written")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{file}:{name}: not UTF-8 text") from None


def read_bundle(path: str | Path) -> Bundle:
    """A bundle, checked before anything in it is trusted: a zip within :data:`LIMITS` (bombs, entry counts),
    only known member names (no path, no ``../``, no link, no duplicate), a manifest of the schema, and every
    other member present, listed, and hashing to what the manifest lists. BundleError names the file and
    member (and field) otherwise."""
    file = Path(path)
    if not file.is_file():
        raise BundleError(f"{file}: no such bundle file")
    try:
        check_zip(file, LIMITS)
    except ArchiveError as exc:
        raise BundleError(f"{file}: {exc}") from None
    try:
        with zipfile.ZipFile(file) as archive:
            names = _member_names(archive, file)
            members = {name: archive.read(name) for name in names}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, zipfile.BadZipFile) and exc.errno is not None:
            raise
        raise BundleError(f"{file}: not a readable zip: {exc}") from None
    manifest = _read_manifest(file, members.pop(MANIFEST))
    for name in MEMBERS[1:]:
        _check_member(file, manifest, name, members.get(name))
    for required in (RESULTS, PREDICTIONS):
        if required not in members:
            raise BundleError(f"{file}: {required} is missing; a bundle holds the run's results and predictions")
    return Bundle(file, manifest, members)


def bundle_results(bundle: Bundle) -> RunResults:
    """The bundle's ``results.json``, parsed with the bundle's limits and checked as rescue's results model."""
    where = f"{bundle.path}:{RESULTS}"
    return readback.validated(RunResults, parse_json(bundle.text(RESULTS), where), where, BundleError)


def bundle_records(bundle: Bundle) -> list[PredictionRecord]:
    """The bundle's own predictions, read with the run folder's reader (one record model, one set of checks)."""
    with tempfile.TemporaryDirectory(prefix="rescue-bundle-") as tmp:
        original = Path(tmp) / PREDICTIONS
        original.write_bytes(bundle.members[PREDICTIONS])
        return read_predictions(original)


def json_lines(bundle: Bundle, name: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of a JSON-lines member, each line parsed with the bundle's limits."""
    if name not in bundle.members:
        return
    for number, line in enumerate(bundle.text(name).splitlines(), 1):
        if line.strip():
            yield number, parse_json(line, f"{bundle.path}:{name}:{number}")


__all__ = ["ANSWERS", "BUNDLE_SCHEMA", "PEOPLE", "Bundle", "Declarations", "FileEntry", "INTERVALS", "MANIFEST", "MEMBERS",
           "Manifest", "RunState", "SystemFacts", "TaskFacts", "bundle_records", "bundle_results", "canonical_json",
           "environment_secrets", "find_secret", "json_lines", "manifest_bytes", "now_iso", "parse_json",
           "read_bundle", "sha256_bytes", "system_kind", "write_bundle", "zip_members"]
