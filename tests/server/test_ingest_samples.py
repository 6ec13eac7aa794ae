"""Sample uploads: only whole PNG/WebP images within the limits are stored, under the job's folder."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness, Headers, Response, png_bytes

from server.services.current_points import current_points
from server.services.pages import has_current_samples


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: image checks and files on disk: the database engine plays no part."""
    return migrated_sqlite_url


def _upload(harness: Harness, job_id: int, token: Headers, image: bytes, **fields: Any) -> Response:
    form = {"attempt": "1", "step": "2", "kind": "eval", "prompt": "a red apple", "seed": "7", "reward": "0.5"}
    form.update({k: str(v) for k, v in fields.items()})
    files = {"image": ("sample.png", image, "image/png")}
    return harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)


@pytest.fixture
def running(harness: Harness) -> tuple[int, Headers]:
    job_id = harness.submit_ok()
    return job_id, harness.start_job(job_id)


def test_png_is_stored_listed_and_served(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    image = png_bytes(16, 12)
    response = _upload(harness, job_id, token, image)
    assert response.status_code == 201 and response.json()["created"] is True
    [sample] = harness.client.get(f"/api/v1/jobs/{job_id}/samples", headers=harness.admin).json()["items"]
    assert (sample["step"], sample["prompt"], sample["seed"], sample["reward"]) == (2, "a red apple", 7, 0.5)
    assert (sample["width"], sample["height"]) == (16, 12)
    served = harness.client.get(sample["image_url"], headers=harness.admin)
    assert served.status_code == 200 and served.content == image and served.headers["content-type"] == "image/png"


def test_image_file_lies_under_the_jobs_samples_folder(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    _upload(harness, job_id, token, png_bytes())
    root = harness.settings.resolved_artifact_root()
    [stored] = (root / "jobs" / str(job_id) / "samples").rglob("*.png")
    assert stored.read_bytes() == png_bytes()


def test_webp_is_accepted(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    response = _upload(harness, job_id, token, png_bytes(fmt="WEBP"))
    assert response.status_code == 201


def test_resent_sample_is_not_stored_twice(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    first = _upload(harness, job_id, token, png_bytes()).json()
    again = _upload(harness, job_id, token, png_bytes()).json()
    assert again == {"id": first["id"], "created": False}
    assert harness.client.get(f"/api/v1/jobs/{job_id}/samples", headers=harness.admin).json()["total"] == 1


def test_text_posing_as_png_is_422(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    response = _upload(harness, job_id, token, b"<script>alert(1)</script>")
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "image"


def test_png_magic_followed_by_garbage_is_422(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    response = _upload(harness, job_id, token, b"\x89PNG\r\n\x1a\n" + b"\x00" * 200)
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "image"


def test_truncated_png_is_422(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    whole = png_bytes(64, 64)
    response = _upload(harness, job_id, token, whole[: len(whole) // 2])
    assert response.status_code == 422


def test_image_over_the_byte_limit_is_413(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    response = _upload(harness, job_id, token, png_bytes() + b"\x00" * harness.settings.max_image_bytes)
    assert response.status_code == 413


def test_image_over_the_pixel_limit_is_422(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    response = _upload(harness, job_id, token, png_bytes(512, 512))
    assert response.status_code == 422 and "pixels" in response.json()["detail"][0]["message"]


def test_rejected_upload_stores_no_row_and_no_file(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    _upload(harness, job_id, token, b"not an image")
    assert harness.client.get(f"/api/v1/jobs/{job_id}/samples", headers=harness.admin).json()["total"] == 0
    assert not (harness.settings.resolved_artifact_root() / "jobs" / str(job_id) / "samples").exists()


def test_samples_filter_by_step_and_kind(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    _upload(harness, job_id, token, png_bytes(), step=1)
    _upload(harness, job_id, token, png_bytes(), step=2, kind="train")
    listed = harness.client.get(
        f"/api/v1/jobs/{job_id}/samples", params={"step": 2, "kind": "train"}, headers=harness.admin
    ).json()
    assert [(s["step"], s["kind"]) for s in listed["items"]] == [(2, "train")]


def test_nan_reward_is_stored_as_unknown(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    assert _upload(harness, job_id, token, png_bytes(), reward="nan").status_code == 201
    [sample] = harness.client.get(f"/api/v1/jobs/{job_id}/samples", headers=harness.admin).json()["items"]
    assert sample["reward"] is None


def test_sample_of_another_job_is_404(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    sample_id = _upload(harness, job_id, token, png_bytes()).json()["id"]
    other = harness.submit_ok()
    response = harness.client.get(f"/api/v1/jobs/{other}/samples/{sample_id}/image", headers=harness.admin)
    assert response.status_code == 404


def test_samples_past_the_step_a_retry_resumed_at_are_listed_as_not_current(harness: Harness) -> None:
    job_id = harness.submit_ok()
    first = harness.start_job(job_id)
    for step in (2, 10):
        assert _upload(harness, job_id, first, png_bytes(), step=step).status_code == 201
    second = harness.start_job(job_id)  # the retry resumes from a checkpoint at step 5
    batch = {"attempt": 2, "steps": [{"step": 5, "wall_time": 1.0, "values": {"loss": 0.5}}]}
    assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=second).status_code == 200
    items = harness.client.get(f"/api/v1/jobs/{job_id}/samples", headers=harness.admin).json()["items"]
    assert {(s["step"], s["attempt"], s["current"]) for s in items} == {(2, 1, True), (10, 1, False)}


@pytest.mark.parametrize(("steps", "expected"), [((10,), False), ((2, 10), True)])
def test_the_gallery_has_samples_only_if_one_is_still_current_after_a_retry(
    harness: Harness, steps: tuple[int, ...], expected: bool
) -> None:
    job_id = harness.submit_ok()
    first = harness.start_job(job_id)
    for step in steps:
        assert _upload(harness, job_id, first, png_bytes(), step=step).status_code == 201
    second = harness.start_job(job_id)  # the retry resumes at step 5: attempt 1's step 10 is superseded
    batch = {"attempt": 2, "steps": [{"step": 5, "wall_time": 1.0, "values": {"loss": 0.5}}]}
    assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=second).status_code == 200
    with harness.session() as session:
        assert has_current_samples(session, job_id, current_points(session, job_id)) is expected
