"""What ``rescue build`` reads: one session (video, subtitles, scenario, cast, group, optional segments
file) or a CSV of many, checked before anything is written.

Every problem of every session is collected, then raised together as one :class:`BuildInputError`
naming the file and the cue (or CSV line), so a user fixes them in one pass.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

from rescue.builder.chunks import TranscriptChunks, chunk_label, labels_by_chunk, read_chunks, suggested_map
from rescue.builder.options import BuildOptions
from rescue.data.models import GROUP_LABELS, NON_PERSON_LABELS, THERAPIST, Scenario
from rescue.data.names import NAME_RULE, name_problem
from rescue.data.text import clock_time, visible_text
from rescue.media import Cue, MediaError, MediaInfo, SubtitleError, load_cues, probe
from rescue.errors import BuildInputError as BuildInputError

# Subtitle and container clocks disagree by a frame or two at the very end.
END_TOLERANCE = 0.1
MANIFEST_COLUMNS = ("video", "subtitles", "scenario", "participants", "group")
MAX_VIDEO_STEM = 100  # the stem names the sample and its files: <group>/<stem>_segmentNN.mp4


@dataclass(frozen=True)
class SessionSpec:
    """One video to build from, as the command line or a manifest CSV line gives it."""

    video: Path
    subtitles: Path
    scenario: Scenario
    participants: tuple[str, ...]
    group: str
    segments: Path | None = None
    origin: str = ""  # "sessions.csv:3" for a CSV line, for messages
    speaker_map: tuple[tuple[str, str], ...] = ()  # subtitle name -> cast name ("Dr. Okafor" -> "Therapist")
    overlap_tolerance: float = BuildOptions.overlap_tolerance
    subs_offset: float = BuildOptions.subs_offset  # --subs-offset: seconds added to every line's times (late subtitles: negative)
    # --transcribe: ``subtitles`` is the transcript rescue writes (DIR/transcripts/<group>/<stem>.srt)
    transcribe: bool = False


@dataclass(frozen=True)
class CheckedSession:
    """A checked session: the video probed and the cues read and within the rules."""

    spec: SessionSpec
    media: MediaInfo
    cues: list[Cue]
    notes: tuple[str, ...] = ()  # what was repaired or is worth knowing (trimmed overlaps, no audio)
    split: tuple[tuple[float, str], ...] = ()  # (start in the source, message) of each half of a split line
    chunks: TranscriptChunks | None = None  # --transcribe: the chunks the transcript was made in

    @property
    def stem(self) -> str:
        """The video's file name without its extension."""
        return self.spec.video.stem


def _cue_name(path: Path, cue: Cue) -> str:
    return f"{path}: cue {cue.index} ({clock_time(cue.start)} --> {clock_time(cue.end)})"


def parse_participants(text: str, where: str) -> tuple[str, ...]:
    """The names of a participants field (comma or semicolon separated); BuildInputError for none or a reserved
    label."""
    names = tuple(n.strip() for n in re.split(r"[;,]", text) if n.strip())
    problems = []
    if not names:
        problems.append(f"{where}: participants: give at least one name, e.g. \"Alan,Evelyn\"")
    for name in names:
        if name in NON_PERSON_LABELS:
            problems.append(f"{where}: participants: {name!r} is a reserved label, not a participant")
    if len(set(names)) != len(names):
        problems.append(f"{where}: participants: a name is listed twice ({', '.join(names)})")
    if problems:
        raise BuildInputError(problems)
    return names


def default_group(participants: tuple[str, ...]) -> str:
    """``alan_and_evelyn``, as the release names couple groups; accents are dropped ("José" -> ``jose``) so the
    name is a portable folder name."""
    def plain(name: str) -> str:
        ascii_only = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
        return re.sub(r"[^a-z0-9]+", "_", ascii_only.lower()).strip("_")

    return "_and_".join(plain(n) for n in participants)


def parse_speaker_map(text: str, where: str, participants: tuple[str, ...] | None) -> tuple[tuple[str, str], ...]:
    """``"Dr. Okafor=Therapist,M=Maya"`` (``;`` works too): each subtitle name and the cast name it stands for
    (one of ``participants`` or Therapist; None: the cast varies, each session's speakers are checked later).
    ``"2:SPEAKER_1=Joel"`` names a label within one chunk of a ``--transcribe`` transcript only. A name given two
    cast names (``SPEAKER_1=Maya,speaker_1=Jon``: names match whatever their case) is refused, naming both
    entries; the same entry twice is kept once."""
    allowed = (*(participants or ()), THERAPIST)
    pairs: list[tuple[str, str]] = []
    problems: list[str] = []
    given: dict[str, tuple[str, str]] = {}  # the name, as matched -> (its entry, its cast name)
    for item in (i.strip() for i in re.split(r"[;,]", text) if i.strip()):
        said, sep, meant = (part.strip() for part in item.partition("="))
        chunk, label = chunk_label(said)
        if chunk is not None:
            said = f"{chunk}:{label}"  # one spelling, whatever spaces surrounded the colon
        if chunk is not None and chunk < 1:
            problems.append(f"{where}: speaker map: {item!r}: transcription chunks are numbered from 1")
        elif not sep or not said or not meant:
            problems.append(f"{where}: speaker map: {item!r} is not NAME=CAST_NAME (e.g. \"Dr. Okafor=Therapist\")")
        elif participants is not None and meant not in allowed:
            problems.append(f"{where}: speaker map: {item!r}: {meant!r} is not one of {', '.join(allowed)}")
        elif (earlier := given.get(said.casefold())) is not None:
            if earlier[1] != meant:
                problems.append(f"{where}: speaker map: {item!r}: {said!r} is already named {earlier[1]!r} by "
                                f"{earlier[0]!r}; give each name one cast name")
        else:
            given[said.casefold()] = (item, meant)
            pairs.append((said, meant))
    if problems:
        raise BuildInputError(problems)
    return tuple(pairs)


def trim_overlaps(path: Path, cues: list[Cue], tolerance: float) -> tuple[list[Cue], list[str]]:
    """A cue running into the next by at most ``tolerance`` seconds ends where the next begins; each trim is
    reported. Longer overlaps are left for :func:`check_cues` to refuse."""
    out: list[Cue] = []
    notes = []
    for cue in cues:
        if out:
            previous = out[-1]
            overlap = previous.end - cue.start
            if 0 < overlap <= tolerance + 1e-9 and cue.start > previous.start:
                out[-1] = replace(previous, end=cue.start)
                notes.append(f"{_cue_name(path, previous)}: overlapped cue {cue.index} by {overlap:.3f} s "
                             f"(within --overlap-tolerance {tolerance:g} s): now ends at {clock_time(cue.start)}")
        out.append(cue)
    return out, notes


def split_shared_lines(path: Path, cues: list[Cue]) -> tuple[list[Cue], list[tuple[float, str]]]:
    """A cue holding the turns of several speakers ("- Jon: ... / - Maya: ...") becomes one cue per turn, its
    time shared in proportion to the words; each half is flagged for review (the boundary is a guess)."""
    out: list[Cue] = []
    flagged: list[tuple[float, str]] = []
    for cue in cues:
        if len(cue.parts) < 2:
            out.append(cue)
            continue
        sizes = [max(1, len(text.split())) for _, text in cue.parts]
        start = cue.start
        names = " and ".join(who for who, _ in cue.parts)
        for n, ((who, text), size) in enumerate(zip(cue.parts, sizes)):
            end = cue.end if n == len(sizes) - 1 else round(start + (cue.end - cue.start) * size / sum(sizes), 3)
            out.append(replace(cue, start=start, end=end, text=text, speakers=(who,), parts=()))
            flagged.append((start, f"{_cue_name(path, cue)} holds {names}: split at a time proportional to the "
                                   f"words ({clock_time(start)}-{clock_time(end)} is {who}'s); check the boundary"))
            start = end
    return [replace(cue, index=i) for i, cue in enumerate(out, start=1)], flagged


def check_cues(path: Path, cues: list[Cue], duration: float, participants: tuple[str, ...]) -> list[str]:
    """The timing and speaker rules of the paper (§7.2): every problem, each naming file and cue."""
    allowed = set(participants) | {THERAPIST}
    problems = []
    previous: Cue | None = None
    for cue in cues:
        name = _cue_name(path, cue)
        if cue.end <= cue.start:
            problems.append(f"{name}: ends before it starts (reversed or empty cue)")
        if cue.start >= duration or cue.end > duration + END_TOLERANCE:
            problems.append(f"{name}: runs past the video's end ({clock_time(duration)})")
        if previous is not None and cue.start < previous.end:
            what = "starts before the previous cue" if cue.start < previous.start else "overlaps the previous cue"
            problems.append(f"{name}: {what} (cue {previous.index} ends at {clock_time(previous.end)}; overlaps up to "
                            "--overlap-tolerance are trimmed)")
        for speaker in cue.speakers:
            if speaker not in allowed:
                problems.append(f"{name}: speaker {speaker!r} is not one of {', '.join(sorted(allowed))}")
        previous = cue
    return problems


def canonical_speakers(cues: list[Cue], participants: tuple[str, ...],
                       speaker_map: tuple[tuple[str, str], ...] = ()) -> list[Cue]:
    """Speaker names as the cast spells them: subtitles often write ``ALAN:`` or ``therapist:``, and a
    transcript names people its own way (``--speaker-map "Dr. Okafor=Therapist"``)."""
    by_fold = {name.casefold(): name for name in (*participants, THERAPIST)}
    by_fold.update({said.casefold(): meant for said, meant in speaker_map if chunk_label(said)[0] is None})
    out = []
    for cue in cues:
        named = tuple(dict.fromkeys(by_fold.get(s.casefold(), s) for s in cue.speakers))
        parts = tuple((by_fold.get(who.casefold(), who), text) for who, text in cue.parts)
        out.append(cue if (named, parts) == (cue.speakers, cue.parts) else replace(cue, speakers=named, parts=parts))
    return out


def _chunked(spec: SessionSpec, cues: list[Cue], problems: list[str],
             notes: list[str]) -> tuple[TranscriptChunks | None, list[Cue], dict[str, list[int]]]:
    """A --transcribe transcript's chunk record (said in ``notes`` when there are several chunks), its lines
    with the chunk-qualified speaker names applied, and the chunks each label has lines in (read before any
    name was applied); what is wrong goes to ``problems``."""
    chunks, found = _chunk_record(spec)
    used = labels_by_chunk(cues, chunks) if chunks is not None else {}
    cues, mapped = chunk_speakers(spec, cues, chunks)
    problems += found + mapped
    if chunks is not None and len(chunks.chunks) > 1:
        notes.append(chunks.describe(spec.subtitles, used))
    return chunks, cues, used


def unused_entries(speaker_map: tuple[tuple[str, str], ...], cues: list[Cue]) -> tuple[tuple[str, str], ...]:
    """The plain entries of ``speaker_map`` (not ``N:LABEL``, which :func:`chunk_speakers` checks) whose name no
    line of ``cues`` carries, whatever its case."""
    heard = {who.casefold() for cue in cues for who in (*cue.speakers, *(w for w, _ in cue.parts))}
    return tuple((said, meant) for said, meant in speaker_map
                 if chunk_label(said)[0] is None and said.casefold() not in heard)


def _unused_problems(uses: list[tuple[SessionSpec, _MapUse]], *, origin: bool = True) -> list[str]:
    """An entry of a speaker map that names no line of any session given that map (a typo, a label the
    transcript does not have): ignored, its speaker would stay unnamed or misnamed without a word. A map given
    to several sessions (``--speaker-map`` beside a manifest) needs each entry in one of them only; ``origin``:
    a map of one manifest line is named by its line."""
    by_map: dict[tuple[tuple[str, str], ...], list[tuple[SessionSpec, _MapUse]]] = {}
    for spec, use in uses:
        if spec.speaker_map:
            by_map.setdefault(spec.speaker_map, []).append((spec, use))
    problems = []
    for mapping, group in by_map.items():
        for entry in mapping:
            if all(entry in use.unused for _spec, use in group):
                heard = sorted({w for _spec, use in group for w in use.heard}, key=lambda n: (len(n), n))
                files = ", ".join(sorted({str(spec.subtitles) for spec, _use in group}))
                line = group[0][0].origin if origin and len(group) == 1 else ""
                problems.append(f"{line + ': ' if line else ''}--speaker-map {entry[0]}={entry[1]}: no line of {files} is {entry[0]!r} (its "
                                f"speakers: {', '.join(heard) or 'none'}); correct the entry or leave it out")
    return problems


def _chunk_record(spec: SessionSpec) -> tuple[TranscriptChunks | None, list[str]]:
    """The chunk record of a --transcribe transcript (None for subtitles given, or a transcript without one)."""
    if not spec.transcribe:
        return None, []
    try:
        return read_chunks(spec.subtitles), []
    except BuildInputError as exc:
        return None, exc.problems


def chunk_speakers(spec: SessionSpec, cues: list[Cue], chunks: TranscriptChunks | None) -> tuple[list[Cue], list[str]]:
    """The ``N:LABEL=NAME`` entries of the speaker map applied to the lines of chunk N (before the entries for
    every chunk); a problem for each entry that names no chunk of the transcript or no label in its chunk."""
    wanted: dict[tuple[int, str], tuple[str, str]] = {}
    for said, meant in spec.speaker_map:
        number, label = chunk_label(said)
        if number is not None:
            wanted[(number, label.casefold())] = (label, meant)
    if not wanted:
        return cues, []
    if chunks is None:
        return cues, [f"{spec.subtitles}: --speaker-map {n}:{label}=...: names a label within a transcription chunk, "
                      "and this file is not a --transcribe transcript with a chunk record"
                      for (n, _fold), (label, _meant) in wanted.items()]
    seen: set[tuple[int, str]] = set()
    out = []
    for cue in cues:
        number = chunks.of(cue.start, cue.end).number
        named = []
        for speaker in cue.speakers:
            key = (number, speaker.casefold())
            seen.add(key)
            named.append(wanted[key][1] if key in wanted else speaker)
        out.append(cue if tuple(named) == cue.speakers else replace(cue, speakers=tuple(dict.fromkeys(named))))
    problems = [f"{spec.subtitles}: --speaker-map {n}:{label}=...: no line of chunk {n} is {label} (the transcript has "
                f"{len(chunks.chunks)} chunk(s))" for (n, fold), (label, _meant) in wanted.items() if (n, fold) not in seen]
    return out, problems


@dataclass(frozen=True)
class _MapUse:
    """What a session's subtitles say of its speaker map: its plain entries no line carries, and the names the
    lines carry before any entry was applied (for the message)."""

    unused: tuple[tuple[str, str], ...]
    heard: tuple[str, ...]


def load_session(spec: SessionSpec) -> CheckedSession:
    """Probe the video and read the subtitles; :class:`BuildInputError` with every problem found (an entry of
    the speaker map that names no line among them: see :func:`load_sessions`, which checks a map given to
    several sessions against all of them)."""
    session, problems, use = _checked(spec)
    if use is not None and use.unused:
        problems += _unused_problems([(spec, use)], origin=False)
    if session is None or problems:
        raise BuildInputError([f"{spec.origin}: {p}" for p in problems] if spec.origin else problems)
    return session


def _checked(spec: SessionSpec) -> tuple[CheckedSession | None, list[str], _MapUse | None]:
    """The session when nothing is wrong with it, every problem found, and the speaker map's use (None when
    the subtitles could not be read)."""
    problems: list[str] = []
    media: MediaInfo | None = None
    cues: list[Cue] = []
    readable = True
    try:
        media = probe(spec.video)
        if not media.has_video:
            problems.append(f"{spec.video}: has no video stream")
    except MediaError as exc:
        problems.append(str(exc))
    try:
        cues = load_cues(spec.subtitles)
    except SubtitleError as exc:
        problems.append(str(exc))
        readable = False
    notes: list[str] = []
    if spec.subs_offset:
        from rescue.builder.align import shift_cues

        moved = shift_cues(cues, spec.subs_offset)
        if len(moved) < len(cues):
            notes.append(f"{spec.subtitles}: --subs-offset {spec.subs_offset:g} moved {len(cues) - len(moved)} "
                         "line(s) before the video's start; they are left out")
        cues = moved
    heard = tuple(dict.fromkeys(who for cue in cues for who in cue.speakers))
    chunks, cues, used = _chunked(spec, cues, problems, notes)
    use = _MapUse(unused_entries(spec.speaker_map, cues), heard) if readable else None
    cues = canonical_speakers(cues, spec.participants, spec.speaker_map)
    cues, trimmed = trim_overlaps(spec.subtitles, cues, spec.overlap_tolerance)
    notes += trimmed
    if media is not None and cues:
        problems += check_cues(spec.subtitles, cues, media.duration, spec.participants)
    if spec.transcribe:
        cast = {*spec.participants, THERAPIST}
        unnamed = sorted({sp for cue in cues for sp in cue.speakers if sp not in cast},
                         key=lambda name: (len(name), name))
        if unnamed:
            # Said first: the one fix for every line below (the transcript stays; nothing is transcribed again).
            problems.insert(0, f"{spec.subtitles}: the transcript's speakers {', '.join(unnamed)} are not in the "
                               f"cast: name them with --speaker-map \"{suggested_map(unnamed, used)}\" (names: "
                               f"{', '.join(sorted(cast))}) or edit the file, then run the same command again"
                               + (f" ({chunks.describe(spec.subtitles, used)})" if chunks and len(chunks.chunks) > 1
                                  else ""))
    cues, split = split_shared_lines(spec.subtitles, cues)
    if media is not None and media.has_video and not media.has_audio:
        notes.append(f"{spec.video}: has no audio track: the clips are silent, and neither the model nor the "
                     "reviewers hear the session")
    if spec.segments is not None and not spec.segments.is_file():
        problems.append(f"{spec.segments}: no such segments file")
    if problems or media is None:
        return None, problems, use
    return CheckedSession(spec, media, cues, tuple(notes), tuple(split), chunks), problems, use


def load_sessions(specs: list[SessionSpec]) -> list[CheckedSession]:
    """Check every session (probes run side by side: each is an ffmpeg process); all problems at once."""
    from concurrent.futures import ThreadPoolExecutor

    problems: list[str] = []
    ids: dict[tuple[str, str], str] = {}
    unique = []
    for spec in specs:
        try:  # specs made in code never passed the CSV's checks: their names become folders too
            check_group(spec.group, spec.origin or str(spec.video))
            check_video_name(spec.video, spec.origin or str(spec.video))
        except BuildInputError as exc:
            problems += exc.problems
            continue
        # Case folded: macOS and Windows keep Clip_segment01.mp4 and clip_segment01.mp4 in one file.
        key = (spec.group.casefold(), spec.video.stem.casefold())
        if key in ids:
            problems.append(f"{spec.origin or spec.video}: {spec.group}/{spec.video.stem} is already built from "
                            f"{ids[key]} (video names must differ within a group, whatever their case)")
            continue
        ids[key] = spec.origin or str(spec.video)
        unique.append(spec)

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(unique)))) as pool:
        results = list(pool.map(_checked, unique))
    sessions = [session for session, _problems, _use in results if session is not None]
    for spec, (_session, found, _use) in zip(unique, results):
        problems += [f"{spec.origin}: {p}" for p in found] if spec.origin else found
    if all(use is not None for _session, _found, use in results):  # unread subtitles may hold the name
        problems += _unused_problems([(spec, use) for spec, (_s, _f, use) in zip(unique, results) if use is not None])
    if problems:
        raise BuildInputError(problems)
    return sessions


def check_scenario(value: str, where: str) -> Scenario:
    """``value`` when it is couple or family; BuildInputError naming ``where`` otherwise."""
    if value not in GROUP_LABELS:
        raise BuildInputError([f"{where}: scenario: {value!r} is not couple or family"])
    return value  # type: ignore[return-value]


def check_group(value: str, where: str) -> str:
    """``value`` when it is a safe folder name (:func:`rescue.data.names.name_problem`); BuildInputError
    otherwise. The group names the folders of its clips, audio and transcripts."""
    problem = name_problem(value)
    if problem is not None:
        raise BuildInputError([f"{where}: group: '{visible_text(value, max_length=60)}' cannot be a folder name: "
                               f"{problem}; {NAME_RULE}"])
    return value


def check_video_name(video: Path, where: str) -> Path:
    """``video`` when its stem is a safe file name (it names the sample and its clips); BuildInputError naming the
    line and what to rename otherwise."""
    problem = name_problem(video.stem, MAX_VIDEO_STEM)
    if problem is not None:
        raise BuildInputError([f"{where}: video: the file name '{visible_text(video.stem, max_length=60)}' cannot "
                               f"name a sample and its clips: {problem}; rename the file ({NAME_RULE}, at most "
                               f"{MAX_VIDEO_STEM})"])
    return video


def read_csv_text(path: Path) -> str:
    """A CSV file's text; :class:`BuildInputError` naming FILE:LINE when it is not UTF-8 (a spreadsheet's
    cp1252 "séance") or holds a NUL byte (a binary file), which the csv module would otherwise crash on."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BuildInputError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise BuildInputError([f"{path}: is a folder, not a CSV file"]) from None
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise BuildInputError([f"{path}:{line}: holds a NUL byte: a binary file, not a CSV text file"])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BuildInputError([f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as "
                               "UTF-8 (a spreadsheet's \"CSV UTF-8\")"]) from None


def read_sessions_csv(path: Path, *, default_map: tuple[tuple[str, str], ...] = (),
                      overlap_tolerance: float = BuildOptions.overlap_tolerance,
                      transcripts: Path | None = None) -> list[SessionSpec]:
    """``--manifest sessions.csv``: a header ``video,subtitles,scenario,participants,group[,segments]
    [,speaker_map]``, one line per video; paths relative to the CSV's folder; participants and speaker-map
    items separated by ``;`` (or ``,`` inside quotes). A line's ``speaker_map`` replaces ``default_map``
    (``--speaker-map``). With ``transcripts`` (``--transcribe``: ``DIR/transcripts``) a line with an empty
    ``subtitles`` is transcribed into ``transcripts/<group>/<video stem>.srt``."""
    reader = csv.DictReader(read_csv_text(path).splitlines())
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in MANIFEST_COLUMNS if c not in header]
    if missing:
        raise BuildInputError([(f"{path}:1: missing column(s) {', '.join(missing)} "
                               f"(expected {','.join(MANIFEST_COLUMNS)}[,segments][,speaker_map])")])
    base = path.parent
    specs, problems = [], []
    for line, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        if not any(row.values()):
            continue
        where = f"{path}:{line}"
        try:
            transcribe = transcripts is not None and not row.get("subtitles")
            empty = [c for c in ("video", "subtitles") if not row.get(c) and not (c == "subtitles" and transcribe)]
            if empty:
                raise BuildInputError([f"{where}: {c}: empty" for c in empty])
            participants = parse_participants(row["participants"], where)
            segments = row.get("segments") or ""
            mapping = parse_speaker_map(row.get("speaker_map") or "", where, participants)
            group = check_group(row["group"] or default_group(participants), where)
            video = check_video_name(base / row["video"], where)
            subtitles = transcripts / group / f"{video.stem}.srt" if transcripts is not None and transcribe \
                else base / row["subtitles"]
            specs.append(SessionSpec(
                video=video, subtitles=subtitles,
                scenario=check_scenario(row["scenario"], where), participants=participants,
                group=group, segments=base / segments if segments else None, origin=where,
                speaker_map=mapping or default_map, overlap_tolerance=overlap_tolerance, transcribe=transcribe,
            ))
        except BuildInputError as exc:
            problems += exc.problems
    if problems:
        raise BuildInputError(problems)
    if not specs:
        raise BuildInputError([f"{path}: lists no videos"])
    return specs
