"""A job token reading beyond its own job (server/services/auth.py, `running_job_of_token`): a running job's token
downloads its team's artifacts and no other team's; the token of a job that has finished, or one no job holds, is
refused as unknown (401, saying so), so a trainer's token is no lasting credential."""

from __future__ import annotations

from server_harness import Harness, Headers, Response, bearer
from uploaded_artifacts import uploaded

from server.services.tokens import JOB_TOKEN_PREFIX, new_token

CONTENT = b"weights of the source job"
UNKNOWN = {"detail": "invalid job token (unknown, or its job has finished)"}


def team_artifact(harness: Harness, team: Headers) -> str:
    """The download URL of an artifact of a running job of `team`."""
    source = harness.submit_ok(headers=team)
    artifact_id = uploaded(harness, source, harness.start_job(source), "checkpoint", "weights.bin", CONTENT, 1)
    return f"/api/v1/jobs/{source}/artifacts/{artifact_id}/download"


def download(harness: Harness, url: str, token: Headers) -> Response:
    return harness.client.get(url, headers=token)


def test_a_running_job_s_token_downloads_its_team_s_artifact_and_not_another_team_s(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    url = team_artifact(harness, lab)
    teammate = harness.start_job(harness.submit_ok(headers=lab))
    stranger = harness.start_job(harness.submit_ok(headers=studio))
    assert download(harness, url, teammate).content == CONTENT
    assert download(harness, url, stranger).status_code == 404


def test_a_finished_job_s_token_is_refused_as_unknown(harness: Harness, lab: Headers) -> None:
    url = team_artifact(harness, lab)
    finished = harness.submit_ok(headers=lab)
    token = harness.start_job(finished)
    harness.finish_job(finished)
    refused = download(harness, url, token)
    assert (refused.status_code, refused.json()) == (401, UNKNOWN)


def test_a_job_token_no_job_holds_is_refused_as_unknown(harness: Harness, lab: Headers) -> None:
    url = team_artifact(harness, lab)
    refused = download(harness, url, bearer(new_token(JOB_TOKEN_PREFIX)))
    assert (refused.status_code, refused.json()) == (401, UNKNOWN)
