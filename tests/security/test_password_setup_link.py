"""Issue 33, item 1: the first password comes from a one-time setup link, never from a token.

The server prints the link at start while the admin has no password (`sfumato server --bootstrap`, `sfumato up`).
It is signed with the secret key, names the user and their session generation, expires after
SETUP_LINK_HOURS and works once; using it logs the user in with the new password.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import pytest
from itsdangerous import TimestampSigner
from security_support import bootstrapped_server, csrf_of, login_with_password
from server_harness import Harness
from sqlalchemy import select

from server.models import AuditEvent
from server.services.errors import ServiceError
from server.services.password_setup import SETUP_LINK_HOURS, first_password_link, redeem_setup_link

REPO = Path(__file__).resolve().parents[2]
CHOSEN = "the admin's first password"


def _secret_key(harness: Harness) -> str:
    return str(harness.client.app.state.settings.secret_key)  # type: ignore[attr-defined]


def _link(harness: Harness) -> str:
    with harness.session() as session:
        link = first_password_link(session, _secret_key(harness))
    assert link is not None
    return link


def _use(harness: Harness, link: str, password: str = CHOSEN) -> httpx.Response:
    page = harness.client.get(link)
    assert page.status_code == 200, page.text
    code = re.search(r'name="code" value="([^"]+)"', page.text)
    assert code
    form = {"code": code.group(1), "new_password": password, "csrf_token": csrf_of(page.text)}
    return harness.client.post("/setup-password", data=form, follow_redirects=False)


def test_the_setup_link_sets_the_admins_first_password_and_logs_in_with_it(harness: Harness) -> None:
    answer = _use(harness, _link(harness))
    assert answer.status_code == 303 and answer.headers["location"] == "/settings"
    assert harness.client.get("/admin/users").status_code == 200
    harness.client.cookies.clear()
    assert login_with_password(harness, "admin", CHOSEN) == 303


def test_a_setup_link_works_once(harness: Harness) -> None:
    link = _link(harness)
    assert _use(harness, link).status_code == 303
    again = {"code": link.split("code=", 1)[1], "new_password": "a second password"}
    again["csrf_token"] = csrf_of(harness.client.get("/settings").text)
    assert harness.client.post("/setup-password", data=again).status_code == 400
    assert harness.client.get(link).status_code == 400
    assert login_with_password(harness, "admin", "a second password") == 401


def test_no_link_is_printed_once_the_admin_has_a_password(harness: Harness) -> None:
    assert _use(harness, _link(harness)).status_code == 303
    with harness.session() as session:
        assert first_password_link(session, _secret_key(harness)) is None


def test_a_forged_or_tampered_link_is_refused(harness: Harness) -> None:
    link = _link(harness)
    assert harness.client.get(link[:-2] + ("AA" if not link.endswith("AA") else "BB")).status_code == 400
    assert harness.client.get("/setup-password?code=eyJ1aWQiOjF9.forged.sig").status_code == 400
    assert harness.client.get("/setup-password").status_code == 400


def test_a_setup_link_expires_after_its_hours(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    issued_at = int(time.time()) - SETUP_LINK_HOURS * 3600 - 60
    with monkeypatch.context() as past:
        past.setattr(TimestampSigner, "get_timestamp", lambda _signer: issued_at)
        link = _link(harness)
    assert harness.client.get(link).status_code == 400


def test_the_setup_page_keeps_its_code_out_of_caches_and_referrers(harness: Harness) -> None:
    page = harness.client.get(_link(harness))
    assert page.headers["cache-control"] == "no-store" and page.headers["referrer-policy"] == "no-referrer"


def test_a_short_first_password_is_refused_naming_the_field_and_the_link_still_works(harness: Harness) -> None:
    link = _link(harness)
    short = _use(harness, link, "7 chars")
    assert short.status_code == 422 and "new_password: a password has 8 to 256 characters" in short.text
    assert _use(harness, link).status_code == 303


def test_the_audit_log_records_the_link_issued_and_used(harness: Harness) -> None:
    assert _use(harness, _link(harness)).status_code == 303
    with harness.session() as session:
        rows = session.execute(
            select(AuditEvent.action, AuditEvent.actor_name).where(AuditEvent.action.like("user.password%"))
        ).all()
    assert [tuple(row) for row in rows] == [("user.password_link", "server start"), ("user.password_setup", "admin")]


def test_two_requests_with_one_link_set_one_password(db_harness: Harness) -> None:
    code = _link(db_harness).split("code=", 1)[1]
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def redeem(password: str) -> None:
        with db_harness.session() as session:
            start.wait()
            try:
                redeem_setup_link(session, _secret_key(db_harness), code, password)
                outcomes.append(password)
            except ServiceError:
                outcomes.append("refused")

    threads = [threading.Thread(target=redeem, args=(p,)) for p in ("first password one", "first password two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [o for o in outcomes if o != "refused"]
    assert len(winners) == 1 and outcomes.count("refused") == 1
    assert login_with_password(db_harness, "admin", winners[0]) == 303


def test_sfumato_server_prints_the_link_at_first_start_and_it_opens_the_admin_account(tmp_path: Path) -> None:
    with bootstrapped_server(tmp_path) as (url, log), httpx.Client(base_url=url) as browser:
        printed = re.search(rf"{re.escape(url)}(/setup-password\?code=\S+)", log.read_text())
        assert printed, log.read_text()
        page = browser.get(printed.group(1))
        code = re.search(r'name="code" value="([^"]+)"', page.text)
        assert page.status_code == 200 and code
        form = {"code": code.group(1), "new_password": CHOSEN, "csrf_token": csrf_of(page.text)}
        assert browser.post("/setup-password", data=form, follow_redirects=True).status_code == 200  # /settings
        assert browser.get("/admin/users").status_code == 200
