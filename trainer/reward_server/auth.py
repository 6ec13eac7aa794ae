"""Who may score: a service token, or whatever the platform's caller check accepts (docs/rewards.md).

``Authorization: Bearer T`` is accepted when T is the service token, or when ``GET <auth_url>`` with the same
header answers 200 (the platform says T is a reward token of a running job, or a member's token, of a team that
may use this service). The platform says how long that answer may be trusted (``Cache-Control: max-age=N``;
no max-age: not at all) and the verdict is kept that long, never over MAX_TRUST_S, so an ended job or a revoked
token is refused as soon as the platform's answer runs out. With neither configured the server is open (a local
development server).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass

import httpx

from trainer.reward_server.verified_callers import OUTAGE_WINDOW_S, VerifiedCallers

MAX_TRUST_S = 60.0  # the longest an acceptance is kept, whatever the platform's answer says
REFUSED_CACHE_S = 5.0  # short: a token refused now may be one the platform has only just issued
AUTH_TIMEOUT_S = 5.0
MAX_CACHED = 10_000  # verdicts kept; expired ones are dropped beyond this (random tokens cannot fill memory)
MAX_AGE = re.compile(r"(?:^|[,\s])max-age=(\d+)(?:$|[,\s])")


class AuthUnavailable(Exception):
    """The platform's caller check could not be asked; the caller should try again."""


@dataclass(frozen=True)
class PlatformVerdict:
    """The caller check's answer: accepted or not, and for how many seconds the platform vouches for it."""

    accepted: bool
    trust_s: float


def trusted_seconds(cache_control: str | None) -> float:
    """The answer's ``max-age`` in seconds, at most MAX_TRUST_S; 0 without one (the answer is for this request)."""
    match = MAX_AGE.search(cache_control or "")
    return min(float(match[1]), MAX_TRUST_S) if match else 0.0


def bearer_token(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Authenticator:
    def __init__(
        self, service_token: str | None, auth_url: str | None, outage_window_s: float = OUTAGE_WINDOW_S
    ) -> None:
        self.service_token = service_token
        self.auth_url = auth_url
        self.verified = VerifiedCallers(outage_window_s)  # honoured while the caller check cannot be asked
        self.verdicts: dict[str, tuple[bool, float]] = {}  # sha256(token) → (accepted, until)

    @property
    def required(self) -> bool:
        return bool(self.service_token or self.auth_url)

    def is_service(self, authorization: str | None) -> bool:
        """The bearer token is the service token (the platform's own scrapes of /metrics come with it)."""
        token = bearer_token(authorization)
        if token is None or not self.service_token:
            return False
        return hmac.compare_digest(token.encode(), self.service_token.encode())

    async def accepts(self, authorization: str | None) -> bool:
        token = bearer_token(authorization)
        if token is None:
            return False
        if self.is_service(authorization):
            return True
        if not self.auth_url:
            return False
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self.verdicts.get(key)
        now = time.monotonic()
        if cached and cached[1] > now:
            return cached[0]
        try:
            verdict = await self.ask_platform(token)
        except AuthUnavailable as exc:
            if self.verified.honours(key, now, str(exc)):
                return True
            raise
        self.verified.record(key, verdict.accepted, now)
        if len(self.verdicts) >= MAX_CACHED:
            live = {k: v for k, v in self.verdicts.items() if v[1] > now}
            self.verdicts = live if len(live) < MAX_CACHED else {}
        self.verdicts[key] = (verdict.accepted, now + (verdict.trust_s if verdict.accepted else REFUSED_CACHE_S))
        return verdict.accepted

    async def ask_platform(self, token: str) -> PlatformVerdict:
        assert self.auth_url is not None
        try:
            async with httpx.AsyncClient(timeout=AUTH_TIMEOUT_S, trust_env=False) as client:
                response = await client.get(self.auth_url, headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as exc:
            raise AuthUnavailable(f"the platform's caller check at {self.auth_url} did not answer: {exc}") from exc
        if response.status_code >= 500:
            raise AuthUnavailable(f"the platform's caller check at {self.auth_url} answered {response.status_code}")
        if response.status_code != 200:
            return PlatformVerdict(False, 0.0)
        return PlatformVerdict(True, trusted_seconds(response.headers.get("cache-control")))
