"""Accounts in the app and on the command line: list, passwd (stdin), disable (work and audit kept, logins and
sessions end), enable; the admin page does the same through the API."""

from __future__ import annotations

import pytest
from _cli import invoke_main
from fastapi.testclient import TestClient
from review_helpers import FIRST, PASSWORD, Client, seg_url


NEW = "a whole new password"


@pytest.fixture
def project(small_project):
    return small_project


def _login(app, name, password=PASSWORD):
    return TestClient(app).post("/api/login", json={"name": name, "password": password})


def test_disable_keeps_work_and_audit_ends_sessions_and_logins(app):
    ann, root = Client(app, "ann"), Client(app, "root")
    assert ann.save(1, {"tone_of_voice": "tense"}, 0).status_code == 200
    assert root.write("POST", "/api/users/ann/disable").status_code == 200
    assert ann.get("/api/me").status_code == 401  # the open session ended
    refused = _login(app, "ann")
    assert refused.status_code == 403 and "disabled" in refused.json()["detail"]
    assert _login(app, "ann", "a wrong password").status_code == 401  # a guesser learns nothing
    users = {u["name"]: u for u in root.get("/api/users").json()}
    assert users["ann"]["disabled"] and users["ann"]["disabled_at"] and not users["bob"]["disabled"]
    ada = Client(app, "ada")
    assert ada.segment(copy="ann")["rows"][0]["values"]["tone_of_voice"] == "tense"  # the work stays
    log = ada.get(seg_url(FIRST) + "/rows/1/audit").json()
    assert any(e["user"] == "ann" and e["action"] == "row.edit" for e in log)
    # a disabled annotator is left out of a new assignment, and refused when named
    plan = root.write("POST", "/api/assignments", {"k": 1}).json()
    assert "ann" not in {n for names in plan.values() for n in names}
    assert root.write("POST", "/api/assignments", {"k": 1, "annotators": ["ann"]}).status_code == 422
    assert root.write("POST", "/api/users/ann/enable").status_code == 200
    assert _login(app, "ann").status_code == 200


def test_a_new_password_ends_the_old_sessions(app):
    ann, root = Client(app, "ann"), Client(app, "root")
    assert root.write("POST", "/api/users/ann/password", {"password": "short"}).status_code == 422
    assert root.write("POST", "/api/users/ann/password", {"password": NEW}).status_code == 200
    assert ann.get("/api/me").status_code == 401
    assert _login(app, "ann").status_code == 401 and _login(app, "ann", NEW).status_code == 200


def test_only_admins_manage_accounts(app):
    root, ada = Client(app, "root"), Client(app, "ada")
    for url, body in (("/api/users/ann/disable", None), ("/api/users/ann/enable", None),
                      ("/api/users/ann/password", {"password": NEW})):
        assert ada.write("POST", url, body).status_code == 403
    assert root.write("POST", "/api/users/root/disable").status_code == 422  # not yourself
    assert root.write("POST", "/api/users/nobody/disable").status_code == 404
    assert "Accounts" in root.get("/").text and "Accounts" not in ada.get("/").text
    page = root.get("/admin")
    assert page.status_code == 200 and 'data-name="ann"' in page.text
    assert ada.get("/admin", follow_redirects=False).status_code == 303


def test_cli_user_list_passwd_disable_enable(project, tmp_path):
    def review(*args, stdin=None):
        from typer.testing import CliRunner

        from rescue.cli import app as cli

        return CliRunner().invoke(cli, ["review", "user", *args], input=stdin)

    assert review("add", str(project), "ann", "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    assert review("add", str(project), "root", "--role", "admin", "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    listed = review("list", str(project))
    assert listed.exit_code == 0 and "ann" in listed.output and "annotator" in listed.output and "active" in listed.output
    assert review("passwd", str(project), "ann", stdin=NEW + "\n").exit_code == 0
    assert review("disable", str(project), "ann").exit_code == 0
    assert "disabled" in review("list", str(project)).output
    from rescue.review.app import create_app

    app = create_app(project)
    assert _login(app, "ann", NEW).status_code == 403
    assert review("enable", str(project), "ann").exit_code == 0
    assert _login(app, "ann", NEW).status_code == 200
    app.state.engine.dispose()


def test_cli_account_errors_exit_2_naming_the_problem(project):
    result = invoke_main(["review", "user", "disable", str(project), "nobody"])
    assert result.exit_code == 2 and "no user 'nobody'" in result.output
    result = invoke_main(["review", "user", "passwd", str(project), "nobody"])
    assert result.exit_code == 2
