"""server/services/auth.py's caller checks called as the API's door calls them: what a token, a page session or a
job token becomes (user, teams, write scope) and the words of each refusal."""

from __future__ import annotations

from datetime import timedelta

import pytest
from server_harness import Harness
from sqlalchemy import select

from server.models import ApiToken, User, utcnow
from server.services.auth import (
    Caller,
    authenticate_api_token,
    authenticate_job_token,
    caller_of_page_session,
    ensure_password_session,
)
from server.services.errors import Forbidden, Unauthorized


def raw_token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def user_id(harness: Harness, username: str) -> int:
    with harness.session() as session:
        return session.scalars(select(User.id).where(User.username == username)).one()


def test_a_token_becomes_its_user_with_teams_and_a_read_scope_cannot_write(harness: Harness) -> None:
    reader = harness.add_user("bea", "lab", "viewer", scope="read")
    harness.join("bea", "default", "member")
    with harness.session() as session:
        caller = authenticate_api_token(session, raw_token(reader))
    assert (caller.username, caller.is_admin, caller.can_write) == ("bea", False, False)
    assert [(t.team_name, t.role) for t in caller.teams] == [("default", "member"), ("lab", "viewer")]
    assert caller.token_id is not None and caller.token_expires_at is None
    with harness.session() as session:
        assert authenticate_api_token(session, raw_token(harness.add_user("cy", "lab"))).can_write


def test_an_unknown_token_and_a_disabled_user_s_token_are_unauthorized_saying_which(harness: Harness) -> None:
    headers = harness.add_user("bea", "lab")
    with harness.session() as session:
        with pytest.raises(Unauthorized) as refused:
            authenticate_api_token(session, "sfu_nobody-has-this")
        assert refused.value.detail == "invalid token"
        session.get_one(User, user_id(harness, "bea")).disabled_at = utcnow()
        session.commit()
        with pytest.raises(Unauthorized) as refused:
            authenticate_api_token(session, raw_token(headers))
        assert refused.value.detail == "this user is disabled"


@pytest.mark.parametrize(("seconds_ago", "written"), [(30.0, False), (60.5, True)])
def test_last_used_at_is_written_at_most_once_a_minute(harness: Harness, seconds_ago: float, written: bool) -> None:
    headers = harness.add_user("bea", "lab")
    earlier = utcnow() - timedelta(seconds=seconds_ago)
    with harness.session() as session:
        token = session.scalars(select(ApiToken).where(ApiToken.user_id == user_id(harness, "bea"))).one()
        token.last_used_at = earlier
        session.commit()
        authenticate_api_token(session, raw_token(headers))
        session.refresh(token)
        assert (token.last_used_at != earlier) is written


def test_a_page_session_becomes_its_user_until_its_generation_changes_or_the_user_is_disabled(
    harness: Harness,
) -> None:
    harness.add_user("bea", "lab", "admin")
    bea = user_id(harness, "bea")
    with harness.session() as session:
        caller = caller_of_page_session(session, bea, can_write=True, generation=0, token_id=None)
        assert caller is not None and (caller.username, caller.can_write, caller.token_id) == ("bea", True, None)
        assert [(t.team_name, t.role) for t in caller.teams] == [("lab", "admin")]
        assert caller_of_page_session(session, bea, can_write=True, generation=1, token_id=None) is None
        assert caller_of_page_session(session, bea + 1000, can_write=True, generation=0, token_id=None) is None
        session.get_one(User, bea).disabled_at = utcnow()
        session.commit()
        assert caller_of_page_session(session, bea, can_write=True, generation=0, token_id=None) is None


def test_a_page_session_opened_with_a_token_keeps_its_scope_and_ends_with_it(harness: Harness) -> None:
    harness.add_user("bea", "lab", scope="read", expires_at=utcnow() + timedelta(hours=1))
    bea = user_id(harness, "bea")
    with harness.session() as session:
        token = session.scalars(select(ApiToken).where(ApiToken.user_id == bea)).one()
        caller = caller_of_page_session(session, bea, can_write=True, generation=0, token_id=token.id)
        assert caller is not None and caller.can_write is False and caller.token_id == token.id
        assert caller.token_expires_at == token.expires_at
        admin = user_id(harness, "admin")
        assert caller_of_page_session(session, admin, can_write=True, generation=0, token_id=token.id) is None
        token.expires_at = utcnow() - timedelta(seconds=1)
        session.commit()
        assert caller_of_page_session(session, bea, can_write=True, generation=0, token_id=token.id) is None


def test_a_job_token_writes_to_its_own_job_only(harness: Harness) -> None:
    harness.add_host("cpu-1", device_type="cpu", count=2)
    job_id = harness.submit_ok({"name": "mine"})
    token = raw_token(harness.start_job(job_id))
    with harness.session() as session:
        assert authenticate_job_token(session, token, job_id).id == job_id
        with pytest.raises(Forbidden) as refused:
            authenticate_job_token(session, token, job_id + 1)
        assert refused.value.detail == f"this token writes to job {job_id} only"
        with pytest.raises(Unauthorized) as unknown:
            authenticate_job_token(session, "sfj_nobody-has-this", job_id)
        assert unknown.value.detail == "invalid job token (unknown, or its job has finished)"


def test_only_a_password_session_may_set_a_password() -> None:
    ensure_password_session(Caller(1, "bea", False, ()))
    with pytest.raises(Forbidden) as refused:
        ensure_password_session(Caller(1, "bea", False, (), token_id=5))
    assert refused.value.detail == (
        "passwords are set only in a page session opened with a password (or a setup link), never with a token"
    )
