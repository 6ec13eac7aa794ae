"""Bearer tokens: the bootstrap admin, SFUMATO_ADMIN_TOKEN, revoked and expired tokens, last use."""

from __future__ import annotations

from datetime import timedelta

from server_harness import Harness, bearer
from sqlalchemy import select

from server.models import ApiToken, Membership, Team, User, utcnow
from server.services.auth import ensure_admin
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
