"""Where a ``--transcribe`` transcript came from: the chunks its audio was sent in, and whether each chunk's
speaker labels were matched to the chunk before it (``DIR/transcripts/<group>/<stem>.chunks.json``, written
beside the transcript, before it).

A diarizing endpoint numbers speakers per request, so ``SPEAKER_1`` of one chunk and ``SPEAKER_1`` of the next
may be two people. The transcript carries one numbering: labels matched across chunks by the speech the chunks
share, and labels that could not be matched numbered apart. This record keeps which chunk is which, so every
build from the transcript (a rerun too) says so, flags the rows of a chunk that could not be matched, and lets
``--speaker-map "2:SPEAKER_4=Joel"`` name a label within one chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue.atomic import write_atomic
from rescue.errors import BuildInputError
from rescue.data.readback import read_json_file, validated
from rescue.data.text import clock_time

if TYPE_CHECKING:
    from rescue.media import Cue

MAX_CHUNKS_BYTES = 16 * 1024 * 1024  # a chunk a minute of a week of audio is a few megabytes
# No audio rescue transcribes is longer than a week: a time past it is an edit, and 1e308 would overflow every clock.
MAX_AUDIO_SECONDS = 7 * 24 * 3600.0
Seconds = Annotated[float, Field(ge=0, le=MAX_AUDIO_SECONDS, allow_inf_nan=False)]

# "2:SPEAKER_1" in a --speaker-map: the label SPEAKER_1 within chunk 2. Any run of digits (signed too) is read
# as a chunk number, so "-1:SPEAKER_4" or a 23-digit number is refused as a chunk, never taken for a label.
_CHUNK_LABEL = re.compile(r"^\s*([+-]?\d+)\s*:\s*(\S.*?)\s*$")


class TranscriptChunk(BaseModel):
    """One chunk of the audio: what was sent, the span its lines were kept for, how its labels were named."""

    model_config = ConfigDict(extra="forbid")

    number: int = Field(ge=1, le=1_000_000)
    start: Seconds  # the audio sent, in the source's seconds
    end: Seconds
    own_from: Seconds  # the lines kept from this chunk's answer
    own_to: Seconds
    reconciled: bool  # every label of its lines matched to the chunk before (the first chunk: always)
    # speech heard by this chunk and the one before
    shared_seconds: Seconds = 0.0
    labels: dict[str, str] = Field(default_factory=dict)  # the transcript's labels in this chunk -> how found
    unmatched: list[str] = Field(default_factory=list)  # the transcript's labels numbered apart

    def holds(self, start: float, end: float) -> bool:
        """Whether a span (source seconds) overlaps the part of the audio this chunk's lines come from."""
        return start < self.own_to and end > self.own_from


class TranscriptChunks(BaseModel):
    """The chunk record of one transcript."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    audio_seconds: Seconds
    chunks: list[TranscriptChunk]

    def of(self, start: float, end: float) -> TranscriptChunk:
        """The chunk a line belongs to: the one that kept it (owns its middle)."""
        middle = (start + end) / 2
        for chunk in self.chunks:
            if chunk.own_from <= middle < chunk.own_to:
                return chunk
        return self.chunks[-1] if middle >= self.chunks[-1].own_from else self.chunks[0]

    def describe(self, transcript: Path, used: Mapping[str, list[int]] | None = None) -> str:
        """What a build from a multi-chunk transcript says: where each chunk starts, and which chunks' speakers
        could not be matched. ``used``: the chunks each label has lines in (:func:`labels_by_chunk`), so the map
        suggested names a label in every chunk that uses it, not only where it was numbered apart."""
        starts = ", ".join(f"{c.number}: {clock_time(c.own_from)}" for c in self.chunks)
        text = (f"{transcript}: transcribed in {len(self.chunks)} chunks (chunk: start {starts}); a diarizing "
                "endpoint numbers speakers per chunk, ")
        apart = [c for c in self.chunks if not c.reconciled]
        if not apart:
            return text + "and the labels were matched across chunks from the speech neighbouring chunks share"
        return text + "; ".join(
            f"chunk {c.number} ({clock_time(c.own_from)}-{clock_time(c.own_to)}) could not be matched to chunk "
            f"{c.number - 1} ({c.shared_seconds:.1f} s of shared speech): its labels are numbered apart"
            f"{' (' + ', '.join(c.unmatched) + ')' if c.unmatched else ''} and each of its rows gets a "
            f"primary_speaker problem; name them with --speaker-map "
            f"\"{suggested_map(c.unmatched or ['SPEAKER_1'], used or {}, c.number)}\"" for c in apart)


def labels_by_chunk(cues: Iterable[Cue], record: TranscriptChunks) -> dict[str, list[int]]:
    """Each speaker label of a transcript's lines and the chunks (numbers, ascending) it has lines in."""
    found: dict[str, set[int]] = {}
    for cue in cues:
        number = record.of(cue.start, cue.end).number
        for speaker in cue.speakers:
            found.setdefault(speaker, set()).add(number)
    return {label: sorted(numbers) for label, numbers in found.items()}


def suggested_map(labels: Iterable[str], used: Mapping[str, list[int]], default_chunk: int | None = None) -> str:
    """A ``--speaker-map`` naming each label in every chunk that has lines of it: ``SPEAKER_4=NAME`` for a label
    of the first chunk (the plain name covers every chunk), else ``2:SPEAKER_4=NAME,3:SPEAKER_4=NAME``, so a run
    with the map filled in never stops again on a chunk the suggestion left out."""
    entries: list[str] = []
    for label in labels:
        chunks = used.get(label) or ([default_chunk] if default_chunk is not None else [])
        if not chunks or chunks[0] == 1:
            entries.append(f"{label}=NAME")
        else:
            entries += [f"{n}:{label}=NAME" for n in chunks]
    return ",".join(entries)


def chunks_path(transcript: Path) -> Path:
    """Where a transcript's chunk record lies: beside it."""
    return transcript.with_name(transcript.stem + ".chunks.json")


def write_chunks(transcript: Path, record: TranscriptChunks) -> None:
    """Write the record (atomically; before the transcript, whose presence marks the pair done)."""
    write_atomic(chunks_path(transcript), record.model_dump_json(indent=1) + "\n")


def read_chunks(transcript: Path) -> TranscriptChunks | None:
    """The transcript's chunk record; None when there is none (a transcript made by hand, or before records);
    :class:`BuildInputError` naming the file when it cannot be read."""
    path = chunks_path(transcript)
    fix = f"(not a chunk record rescue wrote); delete it with {transcript.name} to transcribe again"

    def error(message: str) -> BuildInputError:
        return BuildInputError([f"{message} {fix}"])

    try:
        data = read_json_file(path, error, max_bytes=MAX_CHUNKS_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    record = validated(TranscriptChunks, data, str(path), error)
    if not record.chunks or [c.number for c in record.chunks] != list(range(1, len(record.chunks) + 1)):
        raise BuildInputError([f"{path}: chunks: numbered 1, 2, ... in order expected; delete it with "
                               f"{transcript.name} to transcribe again"])
    return record


def chunk_label(said: str) -> tuple[int | None, str]:
    """A --speaker-map name split into its chunk (``2:SPEAKER_1`` -> 2, ``SPEAKER_1``) or None for any chunk."""
    found = _CHUNK_LABEL.match(said)
    return (int(found.group(1)), found.group(2)) if found else (None, said)
