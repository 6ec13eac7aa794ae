"""Bearer tokens: the bootstrap admin, SFUMATO_ADMIN_TOKEN, revoked and expired tokens (to the microsecond of
expiry), last use, and the teams a caller carries."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from server_harness import Harness, bearer
from sqlalchemy import select

from server.models import ApiToken, Membership, Team, User, utcnow
from server.services import auth
from server.services.auth import LAST_USED_RESOLUTION, TeamRole, ensure_admin
from server.services.errors import Unauthorized
from server.services.tokens import hash_token


def test_first_start_creates_admin_in_default_team_with_a_working_token(harness: Harness) -> None:
    with harness.session() as session:
        admin = session.scalars(select(User).where(User.username == "admin")).one()
        membership = session.scalars(select(Membership).where(Membership.user_id == admin.id)).one()
        assert admin.is_admin and membership.role == "admin"
        assert session.get_one(Team, membership.team_id).name == "default"
    assert harness.client.get("/api/v1/jobs", headers=harness.admin).status_code == 200


def test_second_start_creates_nothing_and_prints_no_token(harness: Harness) -> None:
    with harness.session() as session:
        assert ensure_admin(session, harness.settings) is None
        assert len(session.scalars(select(ApiToken)).all()) == 1


def test_tokens_are_stored_only_as_hashes(harness: Harness) -> None:
    raw = harness.admin["Authorization"].removeprefix("Bearer ")
    with harness.session() as session:
        stored = session.scalars(select(ApiToken.token_hash)).one()
    assert stored == hash_token(raw) and raw not in stored


def test_admin_token_from_settings_is_accepted(harness: Harness) -> None:
    harness.settings.admin_token = "sfu_from-the-environment"
    with harness.session() as session:
        assert ensure_admin(session, harness.settings) is None
    response = harness.client.get("/api/v1/jobs", headers=bearer("sfu_from-the-environment"))
    assert response.status_code == 200


def test_revoked_token_is_401(harness: Harness) -> None:
    headers = harness.add_user("bea", "default")
    with harness.session() as session:
        token = session.scalars(select(ApiToken).join(User).where(User.username == "bea")).one()
        token.revoked_at = utcnow()
        session.commit()
    response = harness.client.get("/api/v1/jobs", headers=headers)
    assert response.status_code == 401 and response.json() == {"detail": "token revoked"}


def test_expired_token_is_401(harness: Harness) -> None:
    headers = harness.add_user("bea", "default", expires_at=utcnow() - timedelta(minutes=1))
    response = harness.client.get("/api/v1/jobs", headers=headers)
    assert response.status_code == 401 and response.json() == {"detail": "token expired"}


def test_use_records_last_used_at(harness: Harness) -> None:
    headers = harness.add_user("bea", "default")
    harness.client.get("/api/v1/jobs", headers=headers)
    with harness.session() as session:
        token = session.scalars(select(ApiToken).join(User).where(User.username == "bea")).one()
        assert token.last_used_at is not None and utcnow() - token.last_used_at < timedelta(minutes=1)


def test_401_tells_the_client_to_use_bearer(harness: Harness) -> None:
    response = harness.client.get("/api/v1/hosts")
    assert response.headers["www-authenticate"] == "Bearer"


NOW = datetime(2026, 12, 2, 12, 0, 0)


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """auth's clock stopped at NOW, so that a test can stand exactly on a boundary."""
    monkeypatch.setattr(auth, "utcnow", lambda: NOW)
    return NOW


def _bea_token(harness: Harness, **fields: datetime) -> tuple[str, int]:
    """Bea's raw token and its id, with `fields` (expires_at, last_used_at) set on it."""
    raw = harness.add_user("bea", "lab", "admin")["Authorization"].removeprefix("Bearer ")
    with harness.session() as session:
        token = session.scalars(select(ApiToken).where(ApiToken.token_hash == hash_token(raw))).one()
        for name, value in fields.items():
            setattr(token, name, value)
        session.commit()
        return raw, token.id


def test_a_token_is_expired_from_the_microsecond_of_its_expiry(harness: Harness, frozen_now: datetime) -> None:
    raw, _ = _bea_token(harness, expires_at=frozen_now)
    with harness.session() as session, pytest.raises(Unauthorized, match="token expired"):
        auth.authenticate_api_token(session, raw)


def test_a_page_session_opened_with_a_token_ends_at_the_microsecond_the_token_expires(
    harness: Harness, frozen_now: datetime
) -> None:
    _, token_id = _bea_token(harness, expires_at=frozen_now)
    with harness.session() as session:
        user_id = session.scalars(select(User.id).where(User.username == "bea")).one()
        assert auth.caller_of_page_session(session, user_id, can_write=True, generation=0, token_id=token_id) is None


@pytest.mark.parametrize(
    ("last_used", "written"),
    [(NOW - LAST_USED_RESOLUTION, NOW), (NOW - LAST_USED_RESOLUTION + timedelta(seconds=1), None)],
    ids=["a full resolution ago: written", "just under: kept"],
)
def test_last_used_at_is_written_again_once_a_full_resolution_has_passed(
    harness: Harness, frozen_now: datetime, last_used: datetime, written: datetime | None
) -> None:
    raw, token_id = _bea_token(harness, last_used_at=last_used)
    with harness.session() as session:
        auth.authenticate_api_token(session, raw)
    with harness.session() as session:
        assert session.get_one(ApiToken, token_id).last_used_at == (written or last_used)


def test_a_caller_carries_each_of_its_teams_id_name_and_role(harness: Harness) -> None:
    raw, token_id = _bea_token(harness)
    harness.join("bea", "default", "viewer")
    with harness.session() as session:
        ids = {name: team_id for name, team_id in session.execute(select(Team.name, Team.id))}
        user_id = session.scalars(select(User.id).where(User.username == "bea")).one()
        by_token = auth.authenticate_api_token(session, raw)
        by_page = auth.caller_of_page_session(session, user_id, can_write=True, generation=0, token_id=token_id)
    in_team_order = sorted(
        [TeamRole(ids["lab"], "lab", "admin"), TeamRole(ids["default"], "default", "viewer")], key=lambda t: t.team_id
    )
    assert by_page is not None
    assert by_token.teams == by_page.teams == tuple(in_team_order)
