"""Blind double annotation (issue #22.5): an annotator sees only their own copy's audit and only segments in their
queue, on every route. The table below names every route of the app; a route added without a row here fails
:func:`test_the_table_names_every_route`, so a new route is never left unchecked.

Roles: ``ann`` (annotator, the segment is in her queue, co-assigned with ``bob``), ``cat`` (annotator, the
segment is not in her queue), ``ada`` (adjudicator), ``root`` (admin).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.routing import APIRoute
from review_helpers import FIRST, Client, make_app, seg_url

from rescue.review import crud

SEG = seg_url(FIRST)
PAGE = "/segments/" + quote(FIRST, safe="")
ROWS = SEG + "/rows"

# (method, route path as the app declares it, url, body, who may: "all" | "queue" | "adjudicator" | "admin")
# "queue": annotators only for segments in their queue; higher roles always. An allowed request may still fail
# for its own reasons (409 for a stale version, 422): what is checked is that only the refused get 403.
ROUTES = [
    ("POST", "/api/login", "/api/login", {"name": "nobody", "password": "x"}, "all"),
    ("POST", "/api/logout", None, None, "all"),
    ("GET", "/api/me", "/api/me", None, "all"),
    ("GET", "/api/openapi.json", "/api/openapi.json", None, "all"),
    ("GET", "/login", "/login", None, "all"),
    ("GET", "/favicon.ico", "/favicon.ico", None, "all"),
    ("GET", "/", "/", None, "all"),
    ("GET", "/api/segments", "/api/segments", None, "all"),
    ("GET", "/api/search", "/api/search?q=the", None, "all"),
    ("GET", "/api/segments/{segment_id:path}", SEG, None, "queue"),
    ("GET", "/api/segments/{segment_id:path}/audit", SEG + "/audit", None, "queue"),
    ("GET", "/api/segments/{segment_id:path}/rows/{row_index:int}/audit", ROWS + "/1/audit", None, "queue"),
    ("GET", "/api/segments/{segment_id:path}/waveform", SEG + "/waveform", None, "queue"),
    ("GET", "/media/{path:path}", "CLIP", None, "queue"),
    ("GET", "/segments/{segment_id:path}", PAGE, None, "queue"),
    ("PUT", "/api/segments/{segment_id:path}/rows/{row_index:int}", ROWS + "/1", {"version": 999, "fields": {}},
     "queue"),
    ("POST", "/api/segments/{segment_id:path}/rows/{row_index:int}/split", ROWS + "/1/split",
     {"layout": 999, "version": 999, "at": 1.0}, "queue"),
    ("POST", "/api/segments/{segment_id:path}/rows/{row_index:int}/merge", ROWS + "/1/merge",
     {"layout": 999, "version": 999, "next_version": 999}, "queue"),
    ("POST", "/api/segments/{segment_id:path}/rows", ROWS, {"layout": 999, "start_time": 0, "end_time": 1}, "queue"),
    ("POST", "/api/segments/{segment_id:path}/rows/take-fields", ROWS + "/take-fields?copy=final",
     {"layout": 999, "source": "ann", "versions": {}}, "adjudicator"),
    ("POST", "/api/segments/{segment_id:path}/boundary", SEG + "/boundary",
     {"layout": 999, "row": 1, "version": 999, "next_version": 999, "at": 1.0}, "queue"),
    ("POST", "/api/segments/{segment_id:path}/rows/take", ROWS + "/take?copy=final", {"layout": 999, "source": "ann"},
     "adjudicator"),
    ("DELETE", "/api/segments/{segment_id:path}/rows/{row_index:int}", ROWS + "/1", {"layout": 999, "version": 999},
     "queue"),
    ("POST", "/api/segments/{segment_id:path}/comments", SEG + "/comments", {"text": "a note"}, "queue"),
    ("POST", "/api/segments/{segment_id:path}/verify", SEG + "/verify", None, "queue"),
    ("POST", "/api/segments/{segment_id:path}/discard", SEG + "/discard", {"reason": "other", "comment": "x"},
     "queue"),
    ("POST", "/api/segments/{segment_id:path}/reopen", SEG + "/reopen", None, "queue"),
    ("GET", "/segments/{segment_id:path}/adjudicate", PAGE + "/adjudicate", None, "adjudicator"),
    ("GET", "/api/segments/{segment_id:path}/versions", SEG + "/versions", None, "adjudicator"),
    ("GET", "/agreement", "/agreement", None, "adjudicator"),
    ("GET", "/api/agreement", "/api/agreement", None, "adjudicator"),
    ("GET", "/api/export", "/api/export", None, "adjudicator"),
    ("GET", "/api/users", "/api/users", None, "adjudicator"),
    ("GET", "/api/assignments", "/api/assignments", None, "adjudicator"),
    ("GET", "/admin", "/admin", None, "admin"),
    ("POST", "/api/users", "/api/users", {"name": "new1", "role": "annotator", "password": "long enough pw"}, "admin"),
    ("POST", "/api/users/{name}/password", "/api/users/cat/password", {"password": "another long pw"}, "admin"),
    ("POST", "/api/users/{name}/disable", "/api/users/nobody/disable", None, "admin"),
    ("POST", "/api/users/{name}/enable", "/api/users/nobody/enable", None, "admin"),
    ("POST", "/api/assignments", "/api/assignments", {"k": 2, "annotators": ["ann", "bob"]}, "admin"),
]
ROLES_OF = {"ann": "annotator", "cat": "annotator", "ada": "adjudicator", "root": "admin"}


@pytest.fixture
def app(project, db_url):
    application = make_app(project, db_url)
    with application.state.sessions() as db:
        plan = crud.assign(db, "root", application.state.project, 2, ["ann", "bob"])
    assert all(names == ["ann", "bob"] or sorted(names) == ["ann", "bob"] for names in plan.values())
    yield application
    application.state.engine.dispose()


def _api_routes(routes):
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(route, "original_router", None)  # FastAPI keeps an included router whole
        if inner is not None:
            yield from _api_routes(inner.routes)


def test_the_table_names_every_route(app):
    declared = {(method, route.path) for route in _api_routes(app.routes) for method in route.methods - {"HEAD"}}
    listed = {(method, path) for method, path, *_ in ROUTES}
    assert len(declared) >= 30
    assert declared - listed == set(), "routes without an access row in ROUTES"
    assert listed - declared == set(), "rows in ROUTES for routes that no longer exist"


def _allowed(who: str, user: str) -> bool:
    role = ROLES_OF[user]
    if who == "all":
        return True
    if who == "queue":
        return user != "cat"
    if who == "adjudicator":
        return role in ("adjudicator", "admin")
    return role == "admin"


# Each role walks every route (a second of CPU): the annotator's walk in the quick run, the others' in the slow one.
@pytest.mark.parametrize("user", [pytest.param("cat", marks=pytest.mark.slow), "ann",
                                  pytest.param("ada", marks=pytest.mark.slow), pytest.param("root", marks=pytest.mark.slow)])
def test_every_route_refuses_exactly_whom_it_should(app, user):
    client = Client(app, user)
    clip = client.get("/api/segments").json()
    clip_url = Client(app, "ada").segment()["media"]["clip"]
    assert clip_url, clip
    for method, path, url, body, who in ROUTES:
        if url is None:  # logging out would end the session the rest of the table uses
            continue
        url = clip_url if url == "CLIP" else url
        answer = client.write(method, url, body) if method != "GET" else client.get(url, follow_redirects=False)
        refused = answer.status_code == 403 or (answer.status_code == 303 and path.endswith(("adjudicate", "admin"))
                                                 or answer.status_code == 303 and path == "/agreement")
        assert refused != _allowed(who, user), (user, method, url, answer.status_code, answer.text[:200])


def test_an_annotator_reads_only_her_own_copys_audit(app):
    ann, bob, ada = Client(app, "ann"), Client(app, "bob"), Client(app, "ada")
    assert ann.save(1, {"tone_of_voice": "ann-secret-tone"}).status_code == 200
    assert bob.save(1, {"tone_of_voice": "bob-secret-tone"}).status_code == 200
    assert bob.save(2, {"tone_of_voice": "bob-row-two"}).status_code == 200
    for url in (SEG + "/audit", SEG + "/audit?row=1", ROWS + "/1/audit", ROWS + "/2/audit", SEG + "/audit?row=2"):
        seen = ann.get(url)
        assert seen.status_code == 200, seen.text
        assert "bob" not in seen.text and "bob-secret-tone" not in seen.text, url
        assert all(entry["copy"] == "ann" for entry in seen.json())
    assert "ann-secret-tone" in ann.get(SEG + "/audit").text
    # The co-annotator's copy itself stays closed too, and the adjudicator sees both.
    assert ann.get(SEG + "?copy=bob").status_code == 403
    both = ada.get(SEG + "/audit").text
    assert "ann-secret-tone" in both and "bob-secret-tone" in both


def test_an_annotator_sees_no_comment_of_her_co_annotator(app):
    ann, bob, ada = Client(app, "ann"), Client(app, "bob"), Client(app, "ada")
    assert bob.write("POST", SEG + "/comments", {"text": "bob-thinks-pursue-withdraw"}).status_code == 201
    assert ann.write("POST", SEG + "/comments", {"text": "ann-own-note"}).status_code == 201
    assert ada.write("POST", SEG + "/comments", {"text": "ada-guidance"}).status_code == 201
    seen = [c["text"] for c in ann.segment()["comments"]]
    assert "bob-thinks-pursue-withdraw" not in seen and {"ann-own-note", "ada-guidance"} <= set(seen)
    final = [c["text"] for c in ada.segment(copy="final")["comments"]]
    assert {"bob-thinks-pursue-withdraw", "ann-own-note", "ada-guidance"} <= set(final)


def test_the_dashboard_shows_the_project_path_to_adjudicators_only(app, project):
    for user, shown in (("ann", False), ("cat", False), ("ada", True), ("root", True)):
        page = Client(app, user).get("/").text
        assert (str(project.resolve()) in page) == shown, user
