"""On the embedded platform an export is a job like any other: queued from the API after a training job has a
checkpoint, placed by the scheduler, run by the worker as `python -m trainer task`, and its export artifact
registered with the platform, where the export list shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from platform_harness import Platform

pytestmark = pytest.mark.slow

TINY_SPEC = Path(__file__).resolve().parents[2] / "examples" / "tiny-native.json"


def test_an_export_job_runs_on_a_worker_and_registers_its_diffusers_lora(sfumato_up: Platform) -> None:
    spec = json.loads(TINY_SPEC.read_text())
    spec["algorithm"].update(total_steps=2, group_size=2)
    spec["checkpoint"] = {"every": 2}
    with sfumato_up.client() as http:
        job_id = sfumato_up.submit(spec)
        sfumato_up.wait_status(job_id, ("succeeded",), timeout=300)
        queued = http.post(f"/api/v1/jobs/{job_id}/exports", json={"format": "diffusers", "step": 2})
        assert queued.status_code == 201, queued.text

        def exported() -> dict | None:
            [item] = http.get(f"/api/v1/jobs/{job_id}/exports").json()["items"]
            assert item["status"] not in ("failed", "cancelled"), item
            return item if item["status"] == "succeeded" and item["artifact"] else None

        export = sfumato_up.wait_for("the export job", exported, timeout=300)
    assert (export["format"], export["step"], export["artifact"]["kind"]) == ("diffusers", 2, "export")
    folder = (
        Path(sfumato_up.env["SFUMATO_HOME"]) / "artifacts" / "jobs" / str(export["job_id"]) / export["artifact"]["path"]
    )
    assert (folder / "pytorch_lora_weights.safetensors").is_file()
