"""Node tokens: how the ranks on nodes 1, 2, ... of a job attempt show a reward service whose job they run.

Every rank scores its own samples, but only node 0 holds the job token (global rank 0 alone reports, and
the job token writes the job's metrics). Each other node gets `sfn_<job>_<attempt>_<node>_<mac>`, the MAC an
HMAC-SHA256 of "job:attempt:node" under a key derived from the server's secret key (SFUMATO_SECRET_KEY).
It is derived, never stored: the caller check recomputes the MAC and then asks the database whether that
attempt is still the job's current, placed one. Nothing else looks at it, so it cannot ingest metrics or
call the API.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

NODE_TOKEN_PREFIX = "sfn_"
# The MAC key is this label signed with the secret key: the secret key itself signs page sessions, and a
# MAC made for one purpose must never be valid for another.
KEY_LABEL = b"sfumato node token v1"
# Canonical numbers only (no sign, no leading zero): one string per (job, attempt, node).
TOKEN_FORMAT = re.compile(r"sfn_([1-9][0-9]{0,9})_([1-9][0-9]{0,9})_([1-9][0-9]{0,9})_([0-9a-f]{64})")


@dataclass(frozen=True)
class NodeClaim:
    """The node a valid token was made for; whether that attempt still runs is the database's to say."""

    job_id: int
    attempt: int
    node_rank: int


def node_token_key(secret_key: str) -> bytes:
    """The key node tokens are signed with, from the server's secret key (server.secret_key)."""
    return hmac.new(secret_key.encode(), KEY_LABEL, hashlib.sha256).digest()


def _mac(key: bytes, job_id: int, attempt: int, node_rank: int) -> str:
    return hmac.new(key, f"{job_id}:{attempt}:{node_rank}".encode(), hashlib.sha256).hexdigest()


def node_token(key: bytes, job_id: int, attempt: int, node_rank: int) -> str:
    """The token of node `node_rank` (1 or more) of attempt `attempt` of job `job_id`."""
    if min(job_id, attempt, node_rank) < 1:
        raise ValueError(f"a node token names job, attempt and node 1 or more, not {job_id}, {attempt}, {node_rank}")
    return f"{NODE_TOKEN_PREFIX}{job_id}_{attempt}_{node_rank}_{_mac(key, job_id, attempt, node_rank)}"


def verified_claim(key: bytes, raw: str) -> NodeClaim | None:
    """The node `raw` was made for; None when it is malformed or its MAC is not this key's (forged, altered,
    or made by a worker with another SFUMATO_SECRET_KEY)."""
    match = TOKEN_FORMAT.fullmatch(raw)
    if match is None:
        return None
    job_id, attempt, node_rank = (int(number) for number in match.groups()[:3])
    if not hmac.compare_digest(match[4], _mac(key, job_id, attempt, node_rank)):
        return None
    return NodeClaim(job_id, attempt, node_rank)
