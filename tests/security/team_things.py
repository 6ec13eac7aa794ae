"""One of everything a team owns, made through the API as its users would, named by the path parameter of the
routes that take it: what the route-table cross-team check asks for with other callers' credentials."""

from __future__ import annotations

from dataclasses import dataclass

from security_support import send_telemetry, token_for
from server_harness import Harness, Headers, png_bytes
from sqlalchemy import Select, select
from uploaded_artifacts import uploaded

from server.models import ApiToken, Team, User
from server.services.tokens import hash_token

# An id no row has: what every route answers for it is what it must answer for another team's id.
MISSING_ID = 2_000_000_001


@dataclass(frozen=True)
class TeamThings:
    team: str
    admin: Headers  # the team's admin, who made everything below
    member: Headers
    ids: dict[str, int | str]  # path parameter → the id (a model's: its name) of the team's own object


def _one(harness: Harness, statement: Select[tuple[int]]) -> int:
    with harness.session() as session:
        found = session.scalar(statement)
    assert found is not None
    return found


def plant(harness: Harness, team: str) -> TeamThings:
    """Team `team` with its admin `{team}-admin` (and a spare token of theirs, never used) and member
    `{team}-member`, and a running job (a metric, a sample, a log line, a checkpoint), an experiment, a reward
    service, an advice, a webhook, an uploaded model, an evaluation of the checkpoint and an edit prompt set; needs an
    online CPU host."""
    admin = harness.add_user(f"{team}-admin", team, "admin")
    member = harness.add_user(f"{team}-member", team, "member")
    spare = token_for(harness, f"{team}-admin")["Authorization"].removeprefix("Bearer ")
    job_id = harness.submit_ok({"name": f"{team}-job"}, headers=admin)
    job_token = harness.start_job(job_id)
    sample_id = send_telemetry(harness, job_id, job_token)
    return TeamThings(
        team,
        admin,
        member,
        {
            "team_id": _one(harness, select(Team.id).where(Team.name == team)),
            "user_id": _one(harness, select(User.id).where(User.username == f"{team}-member")),
            "token_id": _one(harness, select(ApiToken.id).where(ApiToken.token_hash == hash_token(spare))),
            "job_id": job_id,
            "sample_id": sample_id,
            "experiment_id": _created(harness, admin, "/api/v1/experiments", _experiment(team)),
            "service_id": _created(harness, admin, "/api/v1/services", _service(team)),
            "advice_id": _created(harness, admin, "/api/v1/advise", {"spec": {"name": f"{team}-advised"}}),
            "webhook_id": _webhook(harness, admin, team),
            "model_name": _registered_model(harness, admin, team, job_id),
            "version": 1,
            "alias": "production",
            "artifact_id": uploaded(harness, job_id, job_token, "model", "model.safetensors", b"weights"),
            "evaluation_id": _evaluation(harness, admin, job_id),
            "dataset_name": _dataset(harness, admin, team),
        },
    )


def _dataset(harness: Harness, headers: Headers, team: str) -> str:
    """An edit set `{team}-prompts` of one row and its image, as version 1."""
    name = f"{team}-prompts"
    files = [
        ("train", ("train.jsonl", b'{"prompt": "make it red", "image": "a.png"}')),
        ("images", ("a.png", png_bytes())),
    ]
    response = harness.client.post(
        "/api/v1/datasets", data={"name": name, "format": "edit"}, files=files, headers=headers
    )
    assert response.status_code == 201, response.text
    return name


def _experiment(team: str) -> dict[str, object]:
    return {"name": f"{team}-experiment", "spec": {"name": "cell"}, "axes": [{"path": "seed", "values": [1, 2]}]}


def _service(team: str) -> dict[str, object]:
    return {"name": f"{team}-bright", "reward": "brightness", "devices": 1, "device_type": "cpu"}


def _webhook(harness: Harness, headers: Headers, team: str) -> int:
    team_id = _one(harness, select(Team.id).where(Team.name == team))
    return _created(harness, headers, f"/api/v1/teams/{team_id}/webhooks", {"url": f"https://{team}.example.com/hook"})


def _registered_model(harness: Harness, headers: Headers, team: str, job_id: int) -> str:
    """The job's checkpoint as version 1 of model `{team}-model`, with alias `production` on it."""
    name = f"{team}-model"
    version = harness.client.post("/api/v1/models", json={"name": name, "job_id": job_id}, headers=headers)
    assert version.status_code == 201, version.text
    alias = harness.client.put(f"/api/v1/models/{name}/aliases/production", json={"version": 1}, headers=headers)
    assert alias.status_code == 200, alias.text
    return name


def _created(harness: Harness, headers: Headers, path: str, body: dict[str, object]) -> int:
    response = harness.client.post(path, json=body, headers=headers)
    assert response.status_code in (201, 202), response.text
    return int(response.json()["id"])


def _evaluation(harness: Harness, headers: Headers, job_id: int) -> int:
    """An evaluation of the job's checkpoint (queued; its eval job never runs here)."""
    body = {"prompts": "builtin:shapes-heldout", "rewards": [{"name": "brightness"}], "step": 1}
    queued = harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=headers)
    assert queued.status_code == 201, queued.text
    return int(harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=headers).json()["items"][-1]["id"])
