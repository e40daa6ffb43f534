"""The folder a public leaderboard is built from (``BUNDLES``): verified bundles, their verdicts, the release they
share and the changelog.

    BUNDLES/
      release.json                    the data digest and each task's prompt digest every entry must have
      changelog.jsonl                 one line per event: an entry added, an entry re-verified
      ENTRY.rescue.zip                a bundle (rescue submit), as it was added
      ENTRY.rescue.verdict.json/.md   its verdict (rescue verify), naming the bundle's SHA-256

A site is for one release and one rendering: the first entry fixes ``release.json`` and every later one must
have the same data digest and the same prompt digest for every task they share. ``rescue leaderboard add`` is the
one writer of the folder; every file it writes is whole or absent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rescue.atomic import check_target, write_all_atomic
from rescue.data import readback
from rescue.errors import LeaderboardError
from rescue.files import safe_filename, sha256_file
from rescue.submissions.bundle import SHA256, Bundle, Manifest, now_iso, read_bundle, system_kind
from rescue.submissions.verify import Verdict, read_verdict, verdict_json, verdict_markdown, verify

RELEASE = "release.json"
CHANGELOG = "changelog.jsonl"
BUNDLE_SUFFIX = ".rescue.zip"
VERDICT_SUFFIX = ".rescue.verdict.json"
RANKED_LEVELS = ("checked", "re-judged", "reproduced")  # a verdict at one of these verified the bundle


class Release(BaseModel):
    """``release.json``: what every entry of the site shares."""

    model_config = ConfigDict(extra="forbid")

    data_sha256: str = Field(pattern=SHA256.pattern)
    prompts: dict[str, str]  # task -> prompt digest
    created: str


class ChangeEvent(BaseModel):
    """One line of ``changelog.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    time: str
    event: str  # "added", "re-verified"
    entry: str
    level: str
    rescue_version: str = ""


@dataclass
class Entry:
    """One entry of the site: its id, bundle (read and hash-checked) and verdict."""

    id: str
    path: Path
    bundle: Bundle
    verdict: Verdict
    sha256: str

    @property
    def manifest(self) -> Manifest:
        """The bundle's manifest."""
        return self.bundle.manifest


def entry_id(bundle_path: Path) -> str:
    """The entry's id: its file name without ``.rescue.zip`` (or ``.zip``), made safe for a path and a URL."""
    name = bundle_path.name
    for suffix in (BUNDLE_SUFFIX, ".zip"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return safe_filename(name, max_length=80)


def read_release(folder: Path) -> Release | None:
    """``release.json`` of ``folder``; None before the first entry."""
    path = folder / RELEASE
    if not path.exists():
        return None
    return readback.validated(Release, readback.read_json_file(path, LeaderboardError), str(path), LeaderboardError)


def read_changelog(folder: Path) -> list[ChangeEvent]:
    """Every event of ``changelog.jsonl``, oldest first."""
    path = folder / CHANGELOG
    if not path.exists():
        return []
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            where = f"{path}:{number}"
            events.append(readback.validated(ChangeEvent, readback.parse_json(line, where, LeaderboardError), where,
                                             LeaderboardError))
    return events


def _changelog_text(folder: Path, events: list[ChangeEvent]) -> str:
    return "".join(json.dumps(e.model_dump(), ensure_ascii=False) + "\n" for e in [*read_changelog(folder), *events])


def _release_problem(release: Release, manifest: Manifest) -> str | None:
    if manifest.data_sha256 != release.data_sha256:
        return (f"its data SHA-256 {manifest.data_sha256[:12]}... is not the site's release "
                f"({release.data_sha256[:12]}...): another release is another site")
    for task, facts in manifest.tasks.items():
        theirs = release.prompts.get(task)
        if theirs is not None and theirs != facts.prompt_sha256:
            return (f"its {task} prompts (digest {facts.prompt_sha256[:12]}...) are not the site's ({theirs[:12]}...): "
                    "another rendering is another site")
    return None


def read_entries(folder: Path) -> list[Entry]:
    """Every bundle of ``folder`` with its verdict, in file-name order; LeaderboardError naming the file for a
    bundle that cannot be read or whose verdict is missing or belongs to another file."""
    if not folder.is_dir():
        raise LeaderboardError(f"{folder}: not a folder of bundles (rescue leaderboard add FILE --to {folder})")
    entries = []
    for path in sorted(folder.glob(f"*{BUNDLE_SUFFIX}")):
        bundle = read_bundle(path)
        verdict_path = path.with_name(path.name[: -len(BUNDLE_SUFFIX)] + VERDICT_SUFFIX)
        if not verdict_path.is_file():
            raise LeaderboardError(f"{verdict_path}: missing; add bundles with `rescue leaderboard add`, which "
                                   "verifies them")
        verdict = read_verdict(verdict_path)
        digest = sha256_file(path)
        if verdict.bundle_sha256 != digest:
            raise LeaderboardError(f"{verdict_path}: the verdict of another file (bundle SHA-256 "
                                   f"{verdict.bundle_sha256[:12] or '?'}..., the file's {digest[:12]}...)")
        entries.append(Entry(entry_id(path), path, bundle, verdict, digest))
    return entries


def _duplicate(entries: list[Entry], sha: str, verdict: Verdict) -> str | None:
    for entry in entries:
        if entry.sha256 == sha:
            return f"the same file as entry {entry.id}"
        for name, digest in verdict.answer_digests.items():
            if system_kind(name) != "model":
                continue
            for theirs, their_digest in entry.verdict.answer_digests.items():
                if digest == their_digest:
                    return f"{name}'s answers are entry {entry.id}'s {theirs} answers"
    return None


def add_entry(bundle_path: str | Path, folder: str | Path, *, data: str | Path | None = None,
              others_limit: int = 500) -> tuple[Entry, ChangeEvent]:
    """Verify the bundle and add it to ``folder``: refused (LeaderboardError, nothing written) when it does not
    verify, is already there (the same file, or a model's answers an entry already has), or was made on another
    release or rendering than the site's."""
    source, target_folder = Path(bundle_path), Path(folder)
    target_folder.mkdir(parents=True, exist_ok=True)
    entries = read_entries(target_folder)
    release = read_release(target_folder)  # the folder's own files are read (and refused) before any work
    changelog = _changelog_text(target_folder, [])
    identifier = entry_id(source)
    if any(e.id == identifier for e in entries):
        raise LeaderboardError(f"{source}: an entry named {identifier!r} is already in {target_folder}; rename the "
                               "file to add it as another entry")
    verdict = verify(source, data=data, others=[e.verdict for e in entries[:others_limit]])
    if verdict.level not in RANKED_LEVELS or not verdict.passed:
        failed = next((c for c in [*verdict.checks, *verdict.audits] if c.passed is False), None)
        raise LeaderboardError(f"{source}: does not verify ({verdict.level}): "
                               f"{failed.name + ': ' + failed.detail if failed else 'no check passed'}")
    sha = sha256_file(source)
    duplicate = _duplicate(entries, sha, verdict)
    if duplicate:
        raise LeaderboardError(f"{source}: a duplicate: {duplicate}")
    bundle = read_bundle(source)
    problem = _release_problem(release, bundle.manifest) if release is not None else None
    if problem:
        raise LeaderboardError(f"{source}: {problem}")
    prompts = {task: facts.prompt_sha256 for task, facts in bundle.manifest.tasks.items()}
    if release is None:
        release = Release(data_sha256=bundle.manifest.data_sha256, prompts=prompts, created=now_iso())
    else:
        release.prompts = {**prompts, **release.prompts}
    target = target_folder / f"{identifier}{BUNDLE_SUFFIX}"
    verdict_path = target.with_name(f"{identifier}{VERDICT_SUFFIX}")
    for path in (target, verdict_path, verdict_path.with_suffix(".md"), target_folder / RELEASE,
                 target_folder / CHANGELOG):
        check_target(path)
    verdict.bundle = target.name
    event = ChangeEvent(time=now_iso(), event="added", entry=identifier, level=verdict.level,
                        rescue_version=verdict.rescue_version)
    write_all_atomic([
        (target, source.read_bytes()),
        (verdict_path, verdict_json(verdict)),
        (verdict_path.with_suffix(".md"), verdict_markdown(verdict)),
        (target_folder / RELEASE, json.dumps(release.model_dump(), indent=2) + "\n"),
        (target_folder / CHANGELOG, changelog + json.dumps(event.model_dump(), ensure_ascii=False) + "\n"),
    ])
    return Entry(identifier, target, read_bundle(target), verdict, sha), event


def reverify(folder: str | Path, *, data: str | Path | None = None) -> list[ChangeEvent]:
    """Verify every entry again with this rescue (a new rescue version, a judge re-run): each verdict rewritten,
    a "re-verified" event per entry; LeaderboardError naming the first entry that no longer verifies (nothing
    written)."""
    target_folder = Path(folder)
    entries = read_entries(target_folder)
    files: list[tuple[Path, str | bytes]] = []
    events = []
    for entry in entries:
        verdict = verify(entry.path, data=data, others=[e.verdict for e in entries if e.id != entry.id])
        if verdict.level not in RANKED_LEVELS or not verdict.passed:
            raise LeaderboardError(f"{entry.path}: no longer verifies ({verdict.level}); nothing was rewritten")
        verdict.bundle = entry.path.name
        verdict_path = entry.path.with_name(f"{entry.id}{VERDICT_SUFFIX}")
        files += [(verdict_path, verdict_json(verdict)), (verdict_path.with_suffix(".md"), verdict_markdown(verdict))]
        events.append(ChangeEvent(time=now_iso(), event="re-verified", entry=entry.id, level=verdict.level,
                                  rescue_version=verdict.rescue_version))
    files.append((target_folder / CHANGELOG, _changelog_text(target_folder, events)))
    write_all_atomic(files)
    return events
