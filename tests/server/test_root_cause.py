"""A failed job's root cause: the exception its traceback ends with, else the error's first line."""

from __future__ import annotations

from server_harness import Harness

from server.models import Job
from server.services.root_cause import root_cause

TRACEBACK = """trainer exited with code 1 on gpu-a (node 0)
Traceback (most recent call last):
  File "trainer/run.py", line 12, in main
    load()
huggingface_hub.errors.LocalEntryNotFoundError: cannot reach the model hub: name or service not known"""


def test_the_exception_line_a_traceback_ends_with_is_the_root_cause() -> None:
    assert root_cause(TRACEBACK) == (
        "huggingface_hub.errors.LocalEntryNotFoundError: cannot reach the model hub: name or service not known"
    )


def test_with_two_nodes_failing_the_last_traceback_s_exception_is_the_root_cause() -> None:
    second = TRACEBACK.replace("gpu-a", "gpu-b").rsplit("\n", 1)[0] + "\nRuntimeError: NCCL timeout"
    assert root_cause(f"{TRACEBACK}\n\n{second}") == "RuntimeError: NCCL timeout"


def test_an_error_without_a_traceback_reads_its_first_line() -> None:
    assert root_cause("\nworker on host gpu-a shut down; no attempts left (3 of 3 used)\nmore") == (
        "worker on host gpu-a shut down; no attempts left (3 of 3 used)"
    )
    assert root_cause(None) is None


def test_the_api_gives_a_job_s_root_cause_beside_its_error(harness: Harness) -> None:
    job_id = harness.submit_ok()
    with harness.session() as session:
        session.get_one(Job, job_id).error = TRACEBACK
        session.commit()
    shown = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    listed = harness.client.get("/api/v1/jobs", headers=harness.admin).json()["items"][0]
    assert shown["root_cause"] == listed["root_cause"] == root_cause(TRACEBACK)
    assert shown["error"] == TRACEBACK
