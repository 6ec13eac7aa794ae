"""Attack 7: an infinite `wall_time` was accepted (200) from a job token; the compare page and
`metrics.json?walls=1` then answered 500. Ingestion now refuses non-finite and out-of-range numbers with 422,
naming the field."""

from __future__ import annotations

import pytest
from security_support import TwoTeams
from server_harness import Harness

BAD_WALL_TIMES = ["1e999", "-1e999", "NaN", "Infinity", "1e300", "-5"]


def _batch(wall_time: str, step: str = "2") -> bytes:
    point = f'{{"step": {step}, "wall_time": {wall_time}, "values": {{"loss": 1}}}}'
    return f'{{"attempt": 1, "steps": [{point}]}}'.encode()


@pytest.mark.parametrize("wall_time", BAD_WALL_TIMES)
def test_a_non_finite_or_absurd_wall_time_is_refused_naming_the_field(
    harness: Harness, two_teams: TwoTeams, wall_time: str
) -> None:
    response = harness.client.post(
        f"/api/v1/ingest/{two_teams.job_id}/metrics",
        content=_batch(wall_time),
        headers={**two_teams.job_token, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["detail"]] == ["steps.0.wall_time"]


@pytest.mark.parametrize("step", ["1e999", "-1", "2147483648", "NaN"])
def test_a_non_finite_or_out_of_range_step_is_refused_naming_the_field(
    harness: Harness, two_teams: TwoTeams, step: str
) -> None:
    response = harness.client.post(
        f"/api/v1/ingest/{two_teams.job_id}/metrics",
        content=_batch("1.0", step),
        headers={**two_teams.job_token, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["detail"]] == ["steps.0.step"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("step", "1e999"), ("total_steps", "-1"), ("step", "NaN"), ("total_steps", "9999999999")],
)
def test_progress_refuses_non_finite_or_out_of_range_steps(
    harness: Harness, two_teams: TwoTeams, field: str, value: str
) -> None:
    body = {"attempt": "1", "step": "1", "total_steps": "10"} | {field: value}
    text = "{" + ", ".join(f'"{k}": {v}' for k, v in body.items()) + "}"
    response = harness.client.post(
        f"/api/v1/ingest/{two_teams.job_id}/progress",
        content=text.encode(),
        headers={**two_teams.job_token, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["detail"]] == [field]
