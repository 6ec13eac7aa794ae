"""Jobs that score through a reward service: `{"name": "service", "service": NAME}` in the spec's reward list.

At submission the name must be a live service of the job's team (another team's is unknown, as it is a 404);
at dispatch the entry becomes `{"name": "remote", "url": <the service's URL>, ...}` in the spec the trainer
gets, the stored spec keeping the name, so a retry resolves it again."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import LIVE_SERVICE_STATES, Job, RewardService
from server.services.errors import FieldErrors
from trainer.spec import REMOTE_REWARD, SERVICE_REWARD, JobSpec


def service_names(spec: dict[str, Any]) -> list[tuple[int, str]]:
    """(index in the reward list, service name) of every service entry of a stored spec."""
    return [
        (index, entry["service"])
        for index, entry in enumerate(spec.get("reward") or [])
        if entry.get("name") == SERVICE_REWARD and entry.get("service")
    ]


def live_services(session: Session, team_id: int | None, names: list[str]) -> dict[str, RewardService]:
    """The team's live services among `names`, by name."""
    if not names:
        return {}
    return {
        service.name: service
        for service in session.scalars(
            select(RewardService).where(
                RewardService.team_id == team_id,
                RewardService.name.in_(names),
                RewardService.state.in_(LIVE_SERVICE_STATES),
            )
        )
    }


def check_service_rewards(session: Session, spec: JobSpec, team_id: int, team_name: str) -> None:
    """Every service a job names is a live service of its team; else 422 naming `reward.<i>.service`."""
    named = [(i, r.service) for i, r in enumerate(spec.reward) if r.name == SERVICE_REWARD and r.service]
    found = live_services(session, team_id, [name for _, name in named])
    errors = [
        {
            "field": f"reward.{index}.service",
            "message": f"team {team_name!r} has no live reward service named {name!r}; see GET /api/v1/services",
        }
        for index, name in named
        if name not in found
    ]
    if errors:
        raise FieldErrors(errors)


def trainer_spec(session: Session, job: Job) -> dict[str, Any] | None:
    """The job's spec as the trainer runs it: each service entry turned into a remote reward at the service's
    URL, its weight and remote options kept. None when a service has no URL now (not started, or gone)."""
    named = service_names(job.spec)
    if not named:
        return job.spec
    found = live_services(session, job.team_id, [name for _, name in named])
    rewards = [dict(entry) for entry in job.spec["reward"]]
    for index, name in named:
        service = found.get(name)
        if service is None or service.url is None:
            return None
        entry = {k: v for k, v in rewards[index].items() if k not in ("service", "path")}
        rewards[index] = entry | {"name": REMOTE_REWARD, "url": service.url}
    return job.spec | {"reward": rewards}


def missing_service_reason(job: Job, healthy: dict[tuple[int | None, str], RewardService]) -> str | None:
    """Why a queued job cannot start yet: a service it names is not healthy (or no longer exists)."""
    for index, name in service_names(job.spec):
        if (job.team_id, name) not in healthy:
            return f"waits for reward service {name!r} (reward.{index}.service) to be healthy"
    return None
