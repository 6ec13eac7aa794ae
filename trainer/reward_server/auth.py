"""Who may score: a service token, or whatever the platform's caller check accepts (docs/rewards.md).

``Authorization: Bearer T`` is accepted when T is the service token, or when ``GET <auth_url>`` with the same
header answers 200 (the platform says T is a job or user token of a team that may use this service); that
verdict is kept for ``cache_s``. With neither configured the server is open (a local development server).
"""

from __future__ import annotations

import hashlib
import hmac
import time

import httpx

ACCEPTED_CACHE_S = 60.0
REFUSED_CACHE_S = 5.0  # short: a token refused now may be one the platform has only just issued
AUTH_TIMEOUT_S = 5.0
MAX_CACHED = 10_000  # verdicts kept; expired ones are dropped beyond this (random tokens cannot fill memory)


class AuthUnavailable(Exception):
    """The platform's caller check could not be asked; the caller should try again."""


class Authenticator:
    def __init__(self, service_token: str | None, auth_url: str | None) -> None:
        self.service_token = service_token
        self.auth_url = auth_url
        self.verdicts: dict[str, tuple[bool, float]] = {}  # sha256(token) → (accepted, until)

    @property
    def required(self) -> bool:
        return bool(self.service_token or self.auth_url)

    async def accepts(self, authorization: str | None) -> bool:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        token = token.strip()
        if self.service_token and hmac.compare_digest(token.encode(), self.service_token.encode()):
            return True
        if not self.auth_url:
            return False
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self.verdicts.get(key)
        now = time.monotonic()
        if cached and cached[1] > now:
            return cached[0]
        accepted = await self.ask_platform(token)
        if len(self.verdicts) >= MAX_CACHED:
            live = {k: v for k, v in self.verdicts.items() if v[1] > now}
            self.verdicts = live if len(live) < MAX_CACHED else {}
        self.verdicts[key] = (accepted, now + (ACCEPTED_CACHE_S if accepted else REFUSED_CACHE_S))
        return accepted

    async def ask_platform(self, token: str) -> bool:
        assert self.auth_url is not None
        try:
            async with httpx.AsyncClient(timeout=AUTH_TIMEOUT_S, trust_env=False) as client:
                response = await client.get(self.auth_url, headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as exc:
            raise AuthUnavailable(f"the platform's caller check at {self.auth_url} did not answer: {exc}") from exc
        if response.status_code >= 500:
            raise AuthUnavailable(f"the platform's caller check at {self.auth_url} answered {response.status_code}")
        return response.status_code == 200
