"""A build's group and video names become folders and files under ``--out`` (issue 33 item 5): each passes the one
name check (:func:`rescue.data.names.name_problem`), refused with the CSV line and field named, before anything is
written; the default group drops accents so a cast named in any script still gets a portable folder."""

from __future__ import annotations

import pytest

from rescue.builder.inputs import BuildInputError, default_group, read_sessions_csv

HOSTILE_GROUPS = {
    "reserved device": "con",
    "reserved with extension": "LPT1.x",
    "very long": "g" * 200,
    "fullwidth letters": "\uff47\uff52\uff4f\uff55\uff50",
    "decomposed accent": "jose\u0301_and_maria",
    "zero-width joiner": "a\u200db",
    "trailing dot": "group.",
    "dot dot": "..",
}
HOSTILE_VIDEOS = {
    "bell": "clip\x07.mp4",
    "escape sequence": "\x1b[2Jclip.mp4",
    "right-to-left override": "clip\u202e4pm.mp4",
    "very long": "v" * 300 + ".mp4",
    "reserved device": "con.mp4",
    "option-like": "-y.mp4",
    "hidden": ".clip.mp4",
}


def _manifest(tmp_path, video, group):
    path = tmp_path / "sessions.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        import csv

        csv.writer(handle).writerows([["video", "subtitles", "scenario", "participants", "group"],
                                      [video, "a.srt", "couple", "Alan;Evelyn", group]])
    return path


@pytest.mark.parametrize("variant", list(HOSTILE_GROUPS))
def test_a_hostile_group_is_refused_naming_the_line(tmp_path, variant):
    path = _manifest(tmp_path, "a.mp4", HOSTILE_GROUPS[variant])
    with pytest.raises(BuildInputError) as caught:
        read_sessions_csv(path)
    assert caught.value.problems[0].startswith(f"{path}:2: group: ")
    assert "cannot be a folder name" in caught.value.problems[0]


@pytest.mark.parametrize("variant", list(HOSTILE_VIDEOS))
def test_a_hostile_video_file_name_is_refused_naming_the_line(tmp_path, variant):
    path = _manifest(tmp_path, HOSTILE_VIDEOS[variant], "alan_and_evelyn")
    with pytest.raises(BuildInputError) as caught:
        read_sessions_csv(path)
    assert caught.value.problems[0].startswith(f"{path}:2: video: ")
    assert "rename the file" in caught.value.problems[0]


@pytest.mark.parametrize("video, group", [("clip\nnext.mp4", None), ("clip.mp4", "con"), ("clip.mp4", "a/../../b")])
def test_the_command_line_video_and_group_are_checked_before_anything_is_written(tmp_path, video, group):
    from _cli import invoke_main

    args = ["build", str(tmp_path / video), "--subs", str(tmp_path / "a.srt"), "--scenario", "couple",
            "--participants", "Alan;Evelyn", "--out", str(tmp_path / "out")]
    result = invoke_main([*args, "--group", group] if group else args)
    assert result.exit_code == 2 and ("VIDEO: video:" in result.output or "--group: group:" in result.output), \
        result.output
    assert not (tmp_path / "out").exists()


def test_the_default_group_is_a_portable_name_whatever_the_cast():
    assert default_group(("Jos\u00e9", "Mar\u00eda")) == "jose_and_maria"
    assert default_group(("Alan", "Evelyn")) == "alan_and_evelyn"


def test_a_name_in_another_script_is_a_name(tmp_path):
    """A lab's own file and group names in its own language are accepted: only separators, invisible characters
    and look-alikes are refused."""
    path = _manifest(tmp_path, "s\u00e9ance 1.mp4", "jos\u00e9_and_mar\u00eda")
    (spec,) = read_sessions_csv(path)
    assert spec.group == "jos\u00e9_and_mar\u00eda" and spec.video.name == "s\u00e9ance 1.mp4"


def test_plain_names_with_spaces_still_build_their_paths(tmp_path):
    path = _manifest(tmp_path, "Session 1.mp4", "alan and evelyn")
    (spec,) = read_sessions_csv(path)
    assert spec.group == "alan and evelyn" and spec.video.name == "Session 1.mp4"


def test_specs_made_in_code_and_names_differing_in_case_are_refused_before_any_probe(tmp_path):
    from rescue.builder.inputs import SessionSpec, load_sessions

    def spec(video, group="alan_and_evelyn"):
        return SessionSpec(tmp_path / video, tmp_path / "a.srt", "couple", ("Alan", "Evelyn"), group)

    with pytest.raises(BuildInputError) as caught:
        load_sessions([spec("Clip.mp4"), spec("clip.mp4"), spec("x.mp4", group="../../escaped"), spec("con.mp4")])
    problems = "\n".join(caught.value.problems)
    assert "alan_and_evelyn/clip is already built from" in problems and "whatever their case" in problems
    assert "group: '../../escaped' cannot be a folder name" in problems
    assert "video: the file name 'con' cannot name a sample" in problems
