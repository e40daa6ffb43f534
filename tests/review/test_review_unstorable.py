"""Every review write refuses what it cannot store, and stores nothing then (issue #33 item 7).

Against the real app: lone surrogates and non-finite numbers anywhere in any write's body are a 422 naming the place
(one check every body shares), times past the segment's media are refused before anything is written, two tabs of
one annotator moving neighbouring rows' times are serialised, and no route shows an annotator the server's folder.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from review_helpers import FIRST, PASSWORD, Client, make_app, seg_url

from rescue.errors import ReviewError
from rescue.review import crud
from rescue.review.crud import _write



@pytest.fixture
def db_url(review_db_url):  # every test on SQLite and (slow) on PostgreSQL
    return review_db_url


SEG = seg_url(FIRST)
ROWS = SEG + "/rows"
LONE = "\\ud800"  # as a JSON escape: the only way a lone surrogate reaches the server


def _raw(client: Client, method: str, url: str, body: str):  # type: ignore[no-untyped-def]
    """A body sent as written (JSON escapes and ``Infinity`` tokens that a JSON encoder would not write)."""
    return client.http.request(method, url, content=body.encode("ascii"),
                               headers={"X-CSRF-Token": client.csrf, "Content-Type": "application/json"})


def _stored(app) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """How many rows of every table the database holds: a refused write changes none of them."""
    from sqlalchemy import func, select

    from rescue.review.models import AuditEntry, Comment, CopyCut, RowCopy, SegmentState, User

    with app.state.sessions() as db:
        return {m.__name__: db.scalar(select(func.count()).select_from(m))
                for m in (AuditEntry, Comment, CopyCut, RowCopy, SegmentState, User)}


# (method, url, body with LONE where the surrogate goes, the field the 422 names)
SURROGATE_WRITES = [
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {"tone_of_voice": "calm LONE"}}', "fields.tone_of_voice"),
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {"internal_emotion": [{"person": "Sam", '
                         '"emotion_description": "LONE", "intensity": 3}]}}',
     "fields.internal_emotion[0].emotion_description"),
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {"target": ["Sam", "xLONE"]}}', "fields.target[1]"),
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {"LONE": 1}}', "fields"),
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {}, "accepted": ["LONE"]}', "accepted[0]"),
    ("PUT", ROWS + "/1", '{"version": 0, "fields": {}, "acknowledged": ["LONE@target"]}', "acknowledged[0]"),
    ("POST", SEG + "/comments", '{"text": "LONE"}', "text"),
    ("POST", SEG + "/comments", '{"text": "a note LONE", "row_index": 1}', "text"),
    ("POST", SEG + "/discard", '{"reason": "other", "comment": "LONE"}', "comment"),
    ("POST", SEG + "/discard", '{"reason": "LONE", "comment": "x"}', "reason"),
    ("POST", ROWS, '{"layout": 0, "start_time": 0.5, "end_time": 1.0, "dialogue_cleaned": "LONE"}',
     "dialogue_cleaned"),
    ("POST", ROWS, '{"layout": 0, "start_time": 0.5, "end_time": 1.0, "primary_speaker": "LONE"}',
     "primary_speaker"),
    ("POST", ROWS + "/1/split", '{"layout": 0, "version": 0, "at": 1.0, "text_at": 2, "LONE": 1}', "body"),
    ("POST", "/api/users", '{"name": "dee", "role": "annotator", "password": "long enough LONE"}', "password"),
    ("POST", "/api/users", '{"name": "deLONE", "role": "annotator", "password": "long enough"}', "name"),
    ("POST", "/api/users/ann/password", '{"password": "long enough LONE"}', "password"),
    ("POST", "/api/assignments", '{"k": 1, "annotators": ["LONE"]}', "annotators[0]"),
]


@pytest.mark.parametrize(("method", "url", "body", "field"), SURROGATE_WRITES,
                         ids=[f"{m} {u.rsplit('/', 1)[-1]} {f}" for m, u, _, f in SURROGATE_WRITES])
def test_a_lone_surrogate_in_any_write_is_a_422_naming_it_and_nothing_is_stored(app, method, url, body, field):
    root = Client(app, "root")  # an admin: every route is open to them, so only the body can refuse
    before = _stored(app)
    answer = _raw(root, method, url, body.replace("LONE", LONE))
    assert answer.status_code == 422, answer.text
    problems = answer.json()["problems"]
    assert any(p["field"] == field and "surrogate" in p["message"] for p in problems), problems
    assert _stored(app) == before
    # The same write with the character itself (a surrogate pair, U+1F600) is not refused for it.
    fine = _raw(root, method, url, body.replace("LONE", "\\ud83d\\ude00"))
    assert fine.status_code != 500 and "surrogate" not in fine.text, fine.text


def test_a_lone_surrogate_at_login_is_refused_not_a_crash(app):
    from fastapi.testclient import TestClient

    client = TestClient(app)
    for body in ('{"name": "ann", "password": "' + LONE + '"}', '{"name": "' + LONE + '", "password": "x"}'):
        answer = client.post("/api/login", content=body.encode(), headers={"Content-Type": "application/json"})
        assert answer.status_code == 422 and "surrogate" in answer.text, answer.text


@pytest.mark.parametrize(("method", "url"), [
    ("GET", "/api/search?q=%ED%A0%80"), ("GET", SEG + "?copy=%ED%A0%80"), ("PUT", "/api/segments/%ED%A0%80/rows/1"),
    ("PUT", ROWS + "/1?copy=%ED%A0%80"), ("GET", "/api/segments?assignee=%ED%A0%80"),
    ("POST", "/api/users/%ED%A0%80/password"), ("POST", "/api/users/%ED%A0%80/disable"), ("GET", "/media/%ED%A0%80"),
    ("GET", "/?q=%ED%A0%80&assignee=%ED%A0%80"),
])
def test_a_surrogate_encoded_in_a_path_or_query_is_never_a_crash(app, method, url):
    root = Client(app, "root")
    before = _stored(app)
    body = {"version": 0, "fields": {}} if method == "PUT" else {"password": "long enough"} if "password" in url else None
    answer = root.write(method, url, body) if method != "GET" else root.get(url)
    assert answer.status_code in (200, 403, 404), (url, answer.status_code, answer.text)
    assert _stored(app) == before


# --- times that cannot be stored, or lie past the media --------------------------------------------------------------


def _limit(app) -> float:  # type: ignore[no-untyped-def]
    return app.state.project.segment(FIRST).time_limit  # type: ignore[no-any-return]


@pytest.mark.parametrize("times", [
    '"start_time": 0.5, "end_time": Infinity', '"start_time": NaN, "end_time": 1.0',
    '"start_time": -Infinity, "end_time": 1.0', '"start_time": 0.5, "end_time": 1e300',
    '"start_time": 1e300, "end_time": 1e301', '"start_time": 0.5, "end_time": LIMIT_PLUS',
    '"start_time": LIMIT_PLUS, "end_time": LIMIT_PLUS_2', '"start_time": 0.5, "end_time": 1e309',
])
def test_an_insert_with_unstorable_or_out_of_range_times_is_refused_before_any_write(app, ann, times):
    limit = _limit(app)
    times = times.replace("LIMIT_PLUS_2", str(limit + 2)).replace("LIMIT_PLUS", str(limit + 0.5))
    before, rows = _stored(app), ann.segment()["rows"]
    answer = _raw(ann, "POST", ROWS, '{"layout": 0, ' + times + "}")
    assert answer.status_code == 422, answer.text
    assert {p["field"] for p in answer.json()["problems"]} & {"start_time", "end_time"}, answer.text
    assert _stored(app) == before
    after = ann.segment()
    assert after["layout"] == 0 and after["rows"] == rows


@pytest.mark.parametrize("fields", [
    '{"end_time": Infinity}', '{"start_time": NaN}', '{"end_time": 1e300}', '{"end_time": LIMIT_PLUS}',
    '{"start_time": -1}', '{"end_time": -Infinity}', '{"start_time": 0.1, "end_time": 1e308}',
])
def test_a_save_of_unstorable_or_out_of_range_times_is_refused(app, ann, fields):
    last = len(ann.segment()["rows"])  # the last row: only the media's end bounds its end
    fields = fields.replace("LIMIT_PLUS", str(_limit(app) + 0.5))
    before = _stored(app)
    answer = _raw(ann, "PUT", ROWS + f"/{last}", '{"version": 0, "fields": ' + fields + "}")
    assert answer.status_code == 422, answer.text
    assert _stored(app) == before


def test_times_up_to_the_media_end_are_still_accepted(app, ann):
    seg = ann.segment()
    last = seg["rows"][-1]
    limit = _limit(app)
    assert limit >= last["end_time"]
    assert ann.save(len(seg["rows"]), {"end_time": limit}, 0).status_code == 200
    inserted = ann.write("POST", ROWS, {"layout": 0, "start_time": limit - 0.5, "end_time": limit})
    assert inserted.status_code == 201, inserted.text


@pytest.mark.parametrize("at", ["Infinity", "NaN", "-Infinity", "1e300"])
def test_a_split_at_a_non_finite_time_is_refused(app, ann, at):
    before = _stored(app)
    answer = _raw(ann, "POST", ROWS + "/1/split", '{"layout": 0, "version": 0, "at": ' + at + "}")
    assert answer.status_code == 422, answer.text
    assert _stored(app) == before


# --- two tabs of one annotator moving neighbouring rows' times ------------------------------------------------------


def _in_order(rows: list[dict]) -> bool:
    starts = [r["start_time"] for r in rows]
    return starts == sorted(starts)


@pytest.mark.parametrize("third_moves", ["start", "start and end"])
def test_two_tabs_moving_neighbouring_rows_never_break_the_order(app, third_moves):
    """Tab one moves row 2's start later, tab two moves row 3's start earlier, at once: each alone keeps the
    order, together they cross. Another write holds the lock until both saves have checked and wait for it."""
    tabs = [Client(app, "ann"), Client(app, "ann")]
    rows = tabs[0].segment()["rows"]
    second, third = rows[1], rows[2]
    gap = third["start_time"] - second["start_time"]
    late, early = second["start_time"] + 0.75 * gap, second["start_time"] + 0.25 * gap
    moved = {"start_time": early} | ({"end_time": third["end_time"] - 0.01} if third_moves != "start" else {})
    saves = [(tabs[0], 2, {"start_time": late, "end_time": max(second["end_time"], late + 0.1)}), (tabs[1], 3, moved)]
    answers: list = [None, None]

    def save(i: int) -> None:
        client, row, fields = saves[i]
        answers[i] = client.save(row, fields, 0)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
    with _write_lock_held(app):  # another write, in progress while both saves check their rows
        for t in threads:
            t.start()
        _until_waiting_for_the_lock(2)
    for t in threads:
        t.join(30)
    after = tabs[0].segment()["rows"]
    assert _in_order(after), ([r["start_time"] for r in after], [a.text for a in answers])
    assert sorted(a.status_code for a in answers) == [200, 422], [a.text for a in answers]
    refused = next(a for a in answers if a.status_code == 422)
    assert "start_time" in refused.text


@contextmanager
def _write_lock_held(app) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The lock every write of the segment takes, held as another write would: on SQLite the process's write lock,
    on PostgreSQL the segment's advisory lock, from a connection of its own."""
    engine = app.state.engine
    if engine.dialect.name != "postgresql":
        with _write.write_lock:
            yield
        return
    from sqlalchemy import text

    with engine.connect() as connection:
        key = {"key": _write.advisory_key(FIRST)}
        connection.execute(text("SELECT pg_advisory_lock(:key)"), key)
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), key)


def _until_waiting_for_the_lock(count: int) -> None:
    """Until ``count`` threads wait inside the write transaction's entry (their reads and checks done)."""
    import sys
    import time

    entry = _write.writing.__wrapped__.__code__  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        waiting = 0
        for frame in sys._current_frames().values():
            while frame is not None and frame.f_code is not entry:
                frame = frame.f_back
            waiting += frame is not None
        if waiting >= count:
            return
        time.sleep(0.01)
    raise AssertionError("the saves never reached the write lock")


# --- no server path shown to an annotator ----------------------------------------------------------------------------


def test_the_waveform_of_an_unreadable_clip_names_no_server_path(tmp_path):
    from rescue.testing.review_project import demo_samples, make_review_project

    project = make_review_project(tmp_path / "p", demo_samples()[:1], media=False)
    sample_id = demo_samples()[0]["sample_id"]
    (project / "clips").mkdir()
    (project / "clips" / "bad.mp4").write_bytes(b"not a video at all" * 100)
    (project / "manifest.json").write_text(json.dumps({"version": 1, "segments": [
        {"sample_id": sample_id, "clip": "clips/bad.mp4", "start": 0.0, "end": 30.0}]}), encoding="utf-8")
    app = make_app(project, tmp_path / "review.db")
    try:
        for name in ("ann", "ada"):
            answer = Client(app, name).get(seg_url(sample_id) + "/waveform")
            assert answer.status_code == 422, answer.text
            assert str(project.resolve()) not in answer.text and str(tmp_path) not in answer.text, answer.text
            assert "clips/bad.mp4" in answer.text  # the clip named as the project names it
    finally:
        app.state.engine.dispose()


def test_no_page_or_answer_an_annotator_reads_names_the_server_folder(app, project):
    from urllib.parse import quote

    ann = Client(app, "ann")
    assert ann.write("POST", SEG + "/comments", {"text": "a note"}).status_code == 201
    page = "/segments/" + quote(FIRST, safe="")
    for url in ("/", "/?q=the", "/api/segments", "/api/search?q=the", "/api/me", SEG, SEG + "/audit",
                ROWS + "/1/audit", SEG + "/waveform", page, "/api/openapi.json", seg_url("no/such"), "/media/review.db"):
        answer = ann.get(url)
        assert answer.status_code in (200, 404), (url, answer.status_code)
        for spelling in {str(project), str(project.resolve())}:
            assert spelling not in answer.text, url


# --- comments: a co-annotator's count stays unseen --------------------------------------------------------------------


def test_the_segment_list_counts_only_the_comments_an_annotator_may_read(app):
    ann, bob, ada = Client(app, "ann"), Client(app, "bob"), Client(app, "ada")
    for text in ("bob one", "bob two", "bob three"):
        assert bob.write("POST", SEG + "/comments", {"text": text, "row_index": 1}).status_code == 201

    def count(client: Client, **params: str) -> int:
        listing = client.get("/api/segments", params=params).json()
        return next(s["comments"] for s in listing if s["sample_id"] == FIRST)  # type: ignore[no-any-return]

    assert count(ann) == 0 and count(bob) == 3 and count(ada) == 3
    assert ann.write("POST", SEG + "/comments", {"text": "ann's"}).status_code == 201
    assert ada.write("POST", SEG + "/comments", {"text": "ada's"}).status_code == 201
    assert count(ann) == 2 and count(bob) == 4 and count(ada) == 5
    assert count(ann, sort="status") == 2
    assert "bob one" not in ann.get("/").text


# --- user names ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("taken", ["ANN", "Ann", "aNn"])
def test_user_names_are_unique_whatever_their_case(app, taken):
    root = Client(app, "root")
    before = _stored(app)
    answer = root.write("POST", "/api/users", {"name": taken, "role": "annotator", "password": PASSWORD})
    assert answer.status_code == 422 and "already exists" in answer.text, answer.text
    assert _stored(app) == before
    with app.state.sessions() as db, pytest.raises(ReviewError, match="already exists"):
        crud.create_user(db, "cli", taken, "annotator", PASSWORD)


def test_user_passwd_with_input_that_is_not_utf8_is_a_clear_error(tmp_path, small_project):
    from _cli import invoke_main

    db = f"sqlite:///{tmp_path / 'review.db'}"
    for command in (["review", "user", "add", str(small_project), "ann", "--password-stdin", "--db", db],
                    ["review", "user", "passwd", str(small_project), "ann", "--db", db]):
        for data in (b"caf\xe9 latin-1 password\n", b"\xff\xfe\x00p\x00w\n", b"\xc3\n"):
            result = invoke_main(command, input=data)
            assert result.exit_code == 2, result.output
            assert "Traceback" not in result.output and "UTF-8" in result.output, result.output
    assert invoke_main(["review", "user", "add", str(small_project), "ann", "--password-stdin", "--db", db],
                       input="pässwörd-ünïcode\n".encode()).exit_code == 0
    assert invoke_main(["review", "user", "passwd", str(small_project), "ann", "--db", db],
                       input=b"another long one\n").exit_code == 0
