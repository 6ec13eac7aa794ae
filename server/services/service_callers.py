"""Who may score at a reward service, and for how long its server may trust that answer: the check a reward
server makes of its callers (`GET /api/v1/services/{id}/caller`, docs/reward-services.md).

Scoring credentials are the reward tokens of a job's running attempt (node 0's `sfr_` token, random and stored
hashed on the job; the other nodes' node tokens, services.node_tokens), each only for its job's team's
services, and the write-scope API token of an admin or member of that team (any team for a server admin). The
job token, which writes the job's metrics, never scores; neither do read-scope tokens nor viewers. A yes holds
for `caller_trust_seconds` at most, and never past a user token's expiry, so the server asks again soon enough
to refuse an ended job or a revoked token within that bound.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from server.models import PLACED_STATES, Job, RewardService, utcnow
from server.services.auth import Caller, authenticate_api_token
from server.services.errors import Forbidden, NotFound, Unauthorized
from server.services.node_tokens import NODE_TOKEN_PREFIX, verified_claim
from server.services.scoping import team_role
from server.services.tokens import JOB_TOKEN_PREFIX, REWARD_TOKEN_PREFIX, hash_token

SCORING_ROLES = ("admin", "member")

_JOB_OF_CALLER = select(Job.id, Job.team_id, Job.status, Job.attempt)


def authorize_caller(
    session: Session, service_id: int, token: str | None, node_token_key: bytes, trust_seconds: int
) -> int:
    """The seconds (at most `trust_seconds`) a reward server may keep this yes.

    The answer never tells whether a service exists for another team. The token is judged first, the same for
    every id: none, an unknown user token, or a node token not signed with `node_token_key` → Unauthorized; a job
    token, or the token of an attempt that is not placed → Forbidden. Then a service outside the caller's team
    is NotFound, as a missing one is; Forbidden is left for its own team's callers that may not score."""
    if not token:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    if token.startswith(JOB_TOKEN_PREFIX):
        raise Forbidden("a job token does not score: a job's trainer sends its reward token (SFUMATO_REWARD_TOKEN)")
    if token.startswith((REWARD_TOKEN_PREFIX, NODE_TOKEN_PREFIX)):
        job = _placed_job(session, token, node_token_key)
        _service_of(session, service_id, (job.team_id,))
        return trust_seconds
    user = authenticate_api_token(session, token)
    service = _service_of(session, service_id, None if user.is_admin else user.team_ids)
    _ensure_may_score(user, service)
    return _seconds_until(user.token_expires_at, trust_seconds)


def _placed_job(session: Session, token: str, node_token_key: bytes) -> Row[Any]:
    """The job a reward token (node 0) or node token speaks for. It counts while its attempt holds devices (the
    node token's own attempt); a job that ended, went back to the queue or started another attempt has no voice."""
    attempt = None
    if token.startswith(NODE_TOKEN_PREFIX):
        claim = verified_claim(node_token_key, token)
        if claim is None:
            raise Unauthorized("invalid node token: malformed, or not signed with this server's SFUMATO_SECRET_KEY")
        job = session.execute(_JOB_OF_CALLER.where(Job.id == claim.job_id)).first()
        attempt = claim.attempt
    else:
        job = session.execute(_JOB_OF_CALLER.where(Job.reward_token_hash == hash_token(token))).first()
    if job is None or job.status not in PLACED_STATES or attempt not in (None, job.attempt):
        raise Forbidden("this token's job attempt is not running: it may not score")
    return job


def _service_of(session: Session, service_id: int, team_ids: Collection[int | None] | None) -> RewardService:
    """The service when its team is one of `team_ids` (None: any, for a server admin); otherwise NotFound, the
    answer for a service that does not exist."""
    service = session.get(RewardService, service_id)
    if service is None or (team_ids is not None and service.team_id not in team_ids):
        raise NotFound(f"service {service_id} not found")
    return service


def _ensure_may_score(user: Caller, service: RewardService) -> None:
    if not user.can_write:
        raise Forbidden("a read-only token does not score; use a token with write scope")
    if user.is_admin:
        return
    role = team_role(user, service.team_id)
    if role not in SCORING_ROLES:
        raise Forbidden(f"you may not use service {service.id}: role {role!r} (scoring needs admin or member)")


def _seconds_until(expires_at: datetime | None, bound: int) -> int:
    if expires_at is None:
        return bound
    return max(0, min(bound, int((expires_at - utcnow()).total_seconds())))
