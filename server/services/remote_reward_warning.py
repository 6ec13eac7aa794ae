"""A warning at submit time: a remote reward's server does not answer its health check now.

The job is accepted all the same (the server may come up before the job starts, or be reachable from the
GPU hosts only); the trainer retries and fails the step naming the reward if it never answers. The probe is
short so that a submission never waits long on it; `SFUMATO_REMOTE_REWARD_PROBE=false` turns it off where the
server must not open connections to addresses that users name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx

from trainer.spec import REMOTE_REWARD, RewardSpec, stored_spec
from trainer.spec.reward_protocol import HEALTH_PATH

PROBE_TIMEOUT_S = 1.5


def remote_reward_warnings(rewards: Iterable[RewardSpec], probe: bool) -> list[str]:
    """One warning per remote reward whose server does not answer GET /healthz with 200 within the probe;
    none when probing is off (SFUMATO_REMOTE_REWARD_PROBE=false)."""
    warnings: list[str] = []
    if not probe:
        return warnings
    for index, reward in enumerate(rewards):
        if reward.name != REMOTE_REWARD or reward.url is None:
            continue
        problem = _health_problem(reward.url)
        if problem:
            warnings.append(
                f"reward.{index}.url {reward.url!r} does not answer its health check now ({problem}); the job is "
                "accepted, and its trainer retries the server, failing the step if it never answers."
            )
    return warnings


def stored_remote_reward_warnings(data: dict[str, Any], probe: bool) -> list[str]:
    """The same warnings for a stored spec (a queued job's page)."""
    spec = stored_spec(data)
    return remote_reward_warnings(spec.reward, probe) if spec else []


def _health_problem(url: str) -> str | None:
    try:
        response = httpx.get(url + HEALTH_PATH, timeout=PROBE_TIMEOUT_S, follow_redirects=False, trust_env=False)
    except httpx.HTTPError as exc:  # the kind only: the peer's own words are not the submitter's to read
        return type(exc).__name__
    return None if response.status_code == 200 else f"GET {HEALTH_PATH} answered {response.status_code}"
