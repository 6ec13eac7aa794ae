"""Shared by the hostile-input tests: hostile text, the two-teams world, a sample upload."""

from __future__ import annotations

from dataclasses import dataclass

from server_harness import Harness, Headers, Response

XSS = "<script>alert('x')</script>"


@dataclass
class TwoTeams:
    """Team `lab` with a running job that has metrics, a sample, logs and an artifact; team `studio` beside it."""

    lab: Headers  # an admin of lab
    studio: Headers  # an admin of studio
    job_id: int
    job_token: Headers
    sample_id: int


def upload_sample(harness: Harness, job_id: int, token: Headers, image: bytes, prompt: str = "a red apple") -> Response:
    form = {"attempt": "1", "step": "2", "kind": "eval", "prompt": prompt, "seed": "7", "reward": "0.5"}
    files = {"image": ("sample.png", image, "image/png")}
    return harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)
