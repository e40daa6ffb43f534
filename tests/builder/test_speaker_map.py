"""``--speaker-map`` says what it does (#42 item 5): an entry that conflicts with another, or that names no line
of the subtitles, is exit 2 naming the entry (it was ignored or overridden without a word), and the map a
build suggests for a chunked transcript names every chunk a label has lines in (``2:SPEAKER_4=NAME`` alone
left chunk 3's SPEAKER_4 unnamed, and the next run stopped again). Real files: a video, subtitles, a
transcript with its chunk record, read by the real entry point or the builder's own loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _cli import invoke_main
from media_helpers import make_video, write_srt

from rescue.builder.chunks import TranscriptChunk, TranscriptChunks, write_chunks
from rescue.builder.inputs import BuildInputError, SessionSpec, load_sessions, parse_speaker_map, read_sessions_csv

CAST = ("Alan", "Evelyn")


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    return make_video(tmp_path_factory.mktemp("speaker_map") / "clip.mp4", 20.0)


def build_cli(video: Path, subs: Path, out: Path, speaker_map: str, *more: str) -> tuple[int, str]:
    result = invoke_main(["build", str(video), "--subs", str(subs), "--scenario", "couple", "--participants",
                          ",".join(CAST), "--speaker-map", speaker_map, "--out", str(out), *more])
    return result.exit_code, result.output


def diarized(tmp_path: Path) -> Path:
    return write_srt(tmp_path / "s.srt", [(1, 2, "SPEAKER_1", "hello"), (3, 4, "SPEAKER_2", "hi"),
                                          (5, 6, "SPEAKER_3", "yes")])


FULL = "SPEAKER_1=Therapist,SPEAKER_2=Alan,SPEAKER_3=Evelyn"


@pytest.mark.parametrize("entries, named", [
    ("SPEAKER_1=Alan,SPEAKER_1=Evelyn", "'SPEAKER_1=Evelyn': 'SPEAKER_1' is already named 'Alan' by 'SPEAKER_1=Alan'"),
    # Names match whatever their case (the map is applied case-folded): the same name, two cast names.
    ("SPEAKER_1=Alan,speaker_1=Evelyn", "'speaker_1=Evelyn': 'speaker_1' is already named 'Alan'"),
    # Within one chunk, whatever the spacing round the colon.
    ("2:SPEAKER_4=Alan, 2 : SPEAKER_4 = Evelyn", "'2 : SPEAKER_4 = Evelyn': '2:SPEAKER_4' is already named 'Alan'"),
])
def test_a_name_given_two_cast_names_is_refused_naming_both(entries, named):
    with pytest.raises(BuildInputError) as refused:
        parse_speaker_map(entries, "--speaker-map", CAST)
    assert named in str(refused.value)


def test_what_is_not_a_conflict_is_kept():
    # The same entry twice is one entry; a chunk's own name beside the plain one is the documented override.
    assert parse_speaker_map("SPEAKER_1=Alan,SPEAKER_1=Alan", "--speaker-map", CAST) == (("SPEAKER_1", "Alan"),)
    assert parse_speaker_map("SPEAKER_1=Alan,2:SPEAKER_1=Evelyn", "--speaker-map", CAST) == (
        ("SPEAKER_1", "Alan"), ("2:SPEAKER_1", "Evelyn"))


@pytest.mark.parametrize("entry, said", [
    ("-1:SPEAKER_4=Alan", "transcription chunks are numbered from 1"),
    ("-0:SPEAKER_4=Alan", "transcription chunks are numbered from 1"),
    ("0:SPEAKER_4=Alan", "transcription chunks are numbered from 1"),
])
def test_a_chunk_number_below_one_is_refused(entry, said):
    with pytest.raises(BuildInputError, match=re.escape(f"{entry!r}: {said}")):
        parse_speaker_map(entry, "--speaker-map", CAST)


def test_conflicting_entries_exit_2_from_the_command_line(tmp_path, video):
    code, output = build_cli(video, diarized(tmp_path), tmp_path / "out", f"{FULL},SPEAKER_1=Alan")
    assert code == 2 and "'SPEAKER_1=Alan': 'SPEAKER_1' is already named 'Therapist'" in output
    assert "Traceback" not in output and not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, named", [
    ("SPEAKER_99=Alan", "--speaker-map SPEAKER_99=Alan: no line of {subs} is 'SPEAKER_99'"),
    ("Dr. Okafor=Therapist", "--speaker-map Dr. Okafor=Therapist: no line of {subs} is 'Dr. Okafor'"),
    # A chunk number of 23 digits is a chunk number (it was read as a label, and matched nothing, silently).
    ("12345678901234567890123:SPEAKER_4=Alan", "--speaker-map 12345678901234567890123:SPEAKER_4=...: names a "
                                               "label within a transcription chunk"),
    ("1.5:SPEAKER_1=Alan", "--speaker-map 1.5:SPEAKER_1=Alan: no line of {subs} is '1.5:SPEAKER_1'"),
])
def test_an_entry_that_names_no_line_exits_2_naming_it(tmp_path, video, extra, named):
    subs = diarized(tmp_path)
    code, output = build_cli(video, subs, tmp_path / "out", f"{FULL},{extra}")
    flat = " ".join(output.split())
    assert code == 2 and named.format(subs=subs) in flat, output
    assert "its speakers: SPEAKER_1, SPEAKER_2, SPEAKER_3" in flat or ":SPEAKER_4=..." in named
    assert "Traceback" not in output and not (tmp_path / "out").exists()


def test_the_full_map_builds_and_the_unnamed_are_still_named_first(tmp_path, video):
    subs = diarized(tmp_path)
    spec = SessionSpec(video, subs, "couple", CAST, "g", speaker_map=parse_speaker_map(FULL, "--speaker-map", CAST))
    [session] = load_sessions([spec])
    assert [c.speakers for c in session.cues] == [("Therapist",), ("Alan",), ("Evelyn",)]


def test_a_shared_map_needs_each_entry_in_one_session_only(tmp_path, video):
    """``--speaker-map`` beside a manifest is every line's map: an entry one session uses is not refused for the
    sessions that do not; an entry no session uses is; a line's own map is checked against its line."""
    one = write_srt(tmp_path / "one.srt", [(1, 2, "Dr. Okafor", "hello"), (3, 4, "Alan", "hi")])
    two = write_srt(tmp_path / "two.srt", [(1, 2, "Therapist", "hello"), (3, 4, "Evelyn", "hi")])
    sessions = tmp_path / "sessions.csv"
    sessions.write_text("video,subtitles,scenario,participants,group,speaker_map\n"
                        f'{video},{one},couple,"Alan,Evelyn",g1,\n'
                        f'{video},{two},couple,"Alan,Evelyn",g2,\n', encoding="utf-8")
    shared = parse_speaker_map("Dr. Okafor=Therapist", "--speaker-map", None)
    assert len(load_sessions(read_sessions_csv(sessions, default_map=shared))) == 2
    typo = parse_speaker_map("Dr. Okafor=Therapist,Dr Okafor=Therapist", "--speaker-map", None)
    with pytest.raises(BuildInputError) as refused:
        load_sessions(read_sessions_csv(sessions, default_map=typo))
    assert refused.value.problems == [f"--speaker-map Dr Okafor=Therapist: no line of {one}, {two} is 'Dr Okafor' "
                                      "(its speakers: Alan, Evelyn, Therapist, Dr. Okafor); correct the entry or leave "
                                      "it out"]
    sessions.write_text("video,subtitles,scenario,participants,group,speaker_map\n"
                        f'{video},{one},couple,"Alan,Evelyn",g1,"Dr. Okafor=Therapist"\n'
                        f'{video},{two},couple,"Alan,Evelyn",g2,"Dr. Okafor=Therapist"\n', encoding="utf-8")
    assert len(load_sessions(read_sessions_csv(sessions))) == 2  # the same map, given twice: one shared map
    sessions.write_text("video,subtitles,scenario,participants,group,speaker_map\n"
                        f'{video},{one},couple,"Alan,Evelyn",g1,"Dr. Okafor=Therapist"\n'
                        f'{video},{two},couple,"Alan,Evelyn",g2,"M=Evelyn"\n', encoding="utf-8")
    with pytest.raises(BuildInputError) as refused:
        load_sessions(read_sessions_csv(sessions))
    assert refused.value.problems == [f"{sessions}:3: --speaker-map M=Evelyn: no line of {two} is 'M' (its speakers: "
                                      "Evelyn, Therapist); correct the entry or leave it out"]


def test_a_manifest_lines_conflicting_map_is_named_by_its_line(tmp_path, video):
    subs = diarized(tmp_path)
    sessions = tmp_path / "sessions.csv"
    sessions.write_text("video,subtitles,scenario,participants,group,speaker_map\n"
                        f'{video},{subs},couple,"Alan,Evelyn",g1,"{FULL};SPEAKER_2=Evelyn"\n', encoding="utf-8")
    result = invoke_main(["build", "--manifest", str(sessions), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"{sessions}:2: speaker map: 'SPEAKER_2=Evelyn': 'SPEAKER_2' is already named 'Alan'" in " ".join(
        result.output.split())
    assert not (tmp_path / "out").exists()


def test_unreadable_subtitles_are_named_without_blaming_the_map(tmp_path, video):
    subs = tmp_path / "s.srt"
    subs.write_bytes(b"\xff\xfe\x00garbage")
    spec = SessionSpec(video, subs, "couple", CAST, "g", speaker_map=parse_speaker_map(FULL, "--speaker-map", CAST))
    with pytest.raises(BuildInputError) as refused:
        load_sessions([spec])
    assert not [p for p in refused.value.problems if "--speaker-map" in p]


# A transcript in three chunks: chunk 2 could not be matched to chunk 1, so its new speaker is numbered apart
# (SPEAKER_4); chunk 3 was matched to chunk 2 and carries SPEAKER_4 on.
THREE_CHUNKS = TranscriptChunks(audio_seconds=20.0, chunks=[
    TranscriptChunk(number=1, start=0, end=8, own_from=0, own_to=7, reconciled=True),
    TranscriptChunk(number=2, start=6, end=15, own_from=7, own_to=14, reconciled=False, shared_seconds=0.4,
                    unmatched=["SPEAKER_4"]),
    TranscriptChunk(number=3, start=13, end=20, own_from=14, own_to=20, reconciled=True, shared_seconds=3.0),
])
TRANSCRIPT = [(1, 2, "SPEAKER_1", "welcome"), (3, 4, "SPEAKER_2", "hello"), (8, 9, "SPEAKER_1", "go on"),
              (10, 11, "SPEAKER_4", "it was hard"), (15, 16, "SPEAKER_4", "really hard"), (17, 18, "SPEAKER_2", "yes")]
WHO = {"SPEAKER_1": "Therapist", "SPEAKER_2": "Alan", "SPEAKER_4": "Evelyn"}


def transcribed(tmp_path: Path, video: Path, speaker_map: str = "") -> SessionSpec:
    transcript = tmp_path / "out/transcripts/g/clip.srt"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    write_chunks(transcript, THREE_CHUNKS)
    write_srt(transcript, TRANSCRIPT)
    mapping = parse_speaker_map(speaker_map, "--speaker-map", CAST) if speaker_map else ()
    return SessionSpec(video, transcript, "couple", CAST, "g", transcribe=True, speaker_map=mapping)


def suggestions(problem: str) -> list[str]:
    return re.findall(r'--speaker-map "([^"]+)"', problem)


def test_the_suggested_map_names_a_label_in_every_chunk_that_uses_it(tmp_path, video):
    with pytest.raises(BuildInputError) as stopped:
        load_sessions([transcribed(tmp_path, video)])
    first = stopped.value.problems[0]
    whole, chunked = suggestions(first)
    assert whole == "SPEAKER_1=NAME,SPEAKER_2=NAME,2:SPEAKER_4=NAME,3:SPEAKER_4=NAME"
    assert chunked == "2:SPEAKER_4=NAME,3:SPEAKER_4=NAME"  # was "2:SPEAKER_4=NAME": chunk 3 left out
    # The user fills in either suggestion as it stands (the chunk's, plus the plain names): the next run builds.
    for filled in (whole, f"SPEAKER_1=NAME,SPEAKER_2=NAME,{chunked}"):
        named = re.sub(r"(\d+:)?(SPEAKER_\d+)=NAME", lambda m: f"{m.group(0)[:-4]}{WHO[m.group(2)]}", filled)
        [session] = load_sessions([transcribed(tmp_path, video, named)])
        assert [c.speakers[0] for c in session.cues] == [WHO[label] for _s, _e, label, _t in TRANSCRIPT]


def test_chunk_entries_that_name_nothing_are_named_with_the_chunk(tmp_path, video):
    for entry, said in (("4:SPEAKER_4=Evelyn", "no line of chunk 4 is SPEAKER_4 (the transcript has 3 chunk(s))"),
                        ("12345678901234567890123:SPEAKER_4=Evelyn", "no line of chunk 12345678901234567890123 is "
                                                                     "SPEAKER_4"),
                        ("1:SPEAKER_4=Evelyn", "no line of chunk 1 is SPEAKER_4")):
        with pytest.raises(BuildInputError) as stopped:
            load_sessions([transcribed(tmp_path, video, f"SPEAKER_1=Therapist,SPEAKER_2=Alan,SPEAKER_4=Evelyn,{entry}")])
        assert any(said in p for p in stopped.value.problems), stopped.value.problems
    # A plain entry whose label only a chunk's own entry covers names no line: refused like any unused entry.
    with pytest.raises(BuildInputError) as stopped:
        load_sessions([transcribed(tmp_path, video, "SPEAKER_1=Therapist,SPEAKER_2=Alan,2:SPEAKER_4=Evelyn,"
                                                    "3:SPEAKER_4=Evelyn,SPEAKER_4=Evelyn")])
    assert [p for p in stopped.value.problems if "--speaker-map SPEAKER_4=Evelyn: no line of" in p]
