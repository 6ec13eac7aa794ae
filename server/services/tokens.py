"""Secret tokens: shown once, stored only as a SHA-256 digest."""

import hashlib
import secrets

USER_TOKEN_PREFIX = "sfu_"
JOB_TOKEN_PREFIX = "sfj_"
# Node 0's reward token, what its trainer shows reward servers: only services.service_callers accepts it.
REWARD_TOKEN_PREFIX = "sfr_"


def new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()
