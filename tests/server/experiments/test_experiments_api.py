"""POST/GET /api/v1/experiments and its cancel, retry, notes and report: all or nothing, team-scoped, audited."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from markdown_it import MarkdownIt
from server_harness import Harness, Headers
from sqlalchemy import select

from server.models import Allocation, AuditEvent, Experiment, Job, JobStatus, utcnow

THROUGHPUT = "throughput/samples_per_s"
SPEC = {"name": "base", "algorithm": {"total_steps": 2}}


def _body(*axes: tuple[str, list[Any]], spec: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": "exp", "spec": spec or SPEC, "axes": [{"path": p, "values": v} for p, v in axes], **extra}


def _create(harness: Harness, body: dict[str, Any], headers: Headers) -> Any:
    return harness.client.post("/api/v1/experiments", json=body, headers=headers)


def _created(harness: Harness, headers: Headers, *axes: tuple[str, list[Any]]) -> dict[str, Any]:
    response = _create(harness, _body(*axes), headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _release_devices(harness: Harness, job_id: int) -> None:
    """What the worker's exit handling does: the ended job's devices are free again."""
    with harness.session() as session:
        for allocation in session.scalars(select(Allocation).where(Allocation.job_id == job_id)):
            allocation.released_at = utcnow()
        session.commit()


def _report_md(zipped: bytes, experiment_id: int) -> str:
    """report.md of the Markdown report's folder (the API serves it as a zip)."""
    return zipfile.ZipFile(io.BytesIO(zipped)).read(f"experiment-{experiment_id}/report.md").decode()


def _experiment_count(harness: Harness) -> int:
    with harness.session() as session:
        return len(session.scalars(select(Experiment)).all())


def test_each_cell_is_a_queued_exclusive_job_on_one_device_model_in_a_recorded_order(harness: Harness) -> None:
    member = harness.add_user("ann", "red")
    harness.add_host("gpu-1", device_type="cpu", count=2)
    body = _created(harness, member, ("executor.name", ["native", "lean_retain", "jagg"]), ("seed", [1, 2]))
    assert (body["cell_count"], body["state"], body["fair_timing"], body["gpu_model"]) == (6, "queued", True, "H100")
    cells = body["cells"]
    assert [c["values"] for c in cells] == [
        {"executor.name": e, "seed": s} for e in ("native", "lean_retain", "jagg") for s in (1, 2)
    ]
    assert sorted(c["position"] for c in cells) == list(range(6))
    assert sorted(cells, key=lambda c: c["position"]) == sorted(cells, key=lambda c: c["job_id"])
    with harness.session() as session:
        jobs = {job.id: job for job in session.scalars(select(Job))}
    for cell in cells:
        job = jobs[cell["job_id"]]
        assert job.experiment_id == body["id"] and job.experiment_cell == cell["values"]
        assert job.spec["resources"]["exclusive"] is True and job.spec["resources"]["gpu_model"] == "H100"
        assert (job.executor, job.spec["seed"]) == (cell["values"]["executor.name"], cell["values"]["seed"])


def test_fair_timing_is_off_without_an_executor_axis_unless_asked(harness: Harness) -> None:
    plain = _created(harness, harness.admin, ("seed", [1, 2]))
    assert plain["fair_timing"] is False and [c["position"] for c in plain["cells"]] == [0, 1]
    asked = _create(harness, _body(("seed", [1, 2]), fair_timing=True), harness.admin).json()
    assert asked["fair_timing"] is True


def test_one_bad_cell_refuses_the_whole_experiment_naming_the_cell_and_the_field(harness: Harness) -> None:
    response = _create(harness, _body(("algorithm.group_size", [4, 1]), ("seed", [1, 2])), harness.admin)
    assert response.status_code == 422
    fields = [e["field"] for e in response.json()["detail"]]
    assert fields == ["cells[2].algorithm.group_size", "cells[3].algorithm.group_size"]
    assert response.json()["detail"][0]["message"].startswith("cell 2 (algorithm.group_size=1, seed=1): ")
    assert (harness.job_count(), _experiment_count(harness)) == (0, 0)


def test_a_value_of_the_wrong_type_is_refused_naming_the_cell_and_the_field(harness: Harness) -> None:
    response = _create(harness, _body(("seed", [1, "two"])), harness.admin)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["field"] == "cells[1].seed"
    assert error["message"].startswith("cell 1 (seed=two): Input should be a valid integer")


def test_a_problem_of_the_base_spec_is_reported_once(harness: Harness) -> None:
    response = _create(harness, _body(("seed", [1, 2]), spec={"algorithm": {"steps": 2}}), harness.admin)
    assert response.json()["detail"] == [
        {"field": "spec.algorithm.steps", "message": "every cell: Extra inputs are not permitted"}
    ]


def test_an_axis_path_the_spec_lacks_is_refused_naming_it(harness: Harness) -> None:
    response = _create(harness, _body(("algorithm.group_sise", [2, 4])), harness.admin)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {"field": "axes.algorithm.group_sise", "message": "the job spec has no field 'algorithm.group_sise'"}
    ]


def test_more_cells_than_the_setting_allows_are_refused(harness: Harness) -> None:
    harness.client.app.state.settings.max_experiment_cells = 8  # the running app's own settings
    response = _create(harness, _body(("seed", [1, 2, 3]), ("algorithm.group_size", [2, 4, 8])), harness.admin)
    assert response.status_code == 422
    assert response.json()["detail"][0]["message"] == "3 x 3 = 9 cells; at most 8 (SFUMATO_MAX_EXPERIMENT_CELLS)"
    assert harness.job_count() == 0


def test_cells_that_do_not_all_fit_the_queue_limit_are_refused_with_the_count(harness: Harness) -> None:
    member = harness.add_user("ann", "red")
    harness.client.app.state.settings.max_queued_per_user = 5
    harness.submit_ok({"name": "already"}, member)
    response = _create(harness, _body(("seed", [1, 2, 3, 4, 5])), member)
    assert response.status_code == 429
    assert "these 5 jobs need 5 places and 4 are left" in response.json()["detail"]
    assert (harness.job_count(), _experiment_count(harness)) == (1, 0)


def test_another_teams_experiment_is_not_found_anywhere(harness: Harness) -> None:
    red = harness.add_user("ann", "red")
    blue = harness.add_user("bob", "blue")
    experiment_id = _created(harness, red, ("seed", [1, 2]))["id"]
    for method, path in [
        ("GET", f"/api/v1/experiments/{experiment_id}"),
        ("GET", f"/api/v1/experiments/{experiment_id}/report"),
        ("GET", f"/api/v1/experiments/{experiment_id}/notes"),
        ("POST", f"/api/v1/experiments/{experiment_id}/cancel"),
        ("POST", f"/api/v1/experiments/{experiment_id}/retry"),
    ]:
        response = harness.client.request(method, path, headers=blue)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["detail"] == f"experiment {experiment_id} not found"
    note = harness.client.post(f"/api/v1/experiments/{experiment_id}/notes", json={"body": "hi"}, headers=blue)
    assert note.status_code == 404
    assert harness.client.get("/api/v1/experiments", headers=blue).json()["total"] == 0


def test_viewers_cannot_create_members_cancel_their_own_and_admins_any(harness: Harness) -> None:
    ann = harness.add_user("ann", "red")
    cy = harness.add_user("cy", "red")
    viewer = harness.add_user("vic", "red", role="viewer")
    boss = harness.add_user("boss", "red", role="admin")
    assert _create(harness, _body(("seed", [1])), viewer).status_code == 403
    experiment_id = _created(harness, ann, ("seed", [1, 2]))["id"]
    refused = harness.client.post(f"/api/v1/experiments/{experiment_id}/cancel", headers=cy)
    assert refused.status_code == 403
    cancelled = harness.client.post(f"/api/v1/experiments/{experiment_id}/cancel", headers=boss)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    again = harness.client.post(f"/api/v1/experiments/{experiment_id}/cancel", headers=boss)
    assert again.status_code == 409


def test_retry_queues_the_failed_cells_only_and_every_action_is_audited(harness: Harness) -> None:
    ann = harness.add_user("ann", "red")
    body = _created(harness, ann, ("seed", [1, 2, 3]))
    failed, succeeded, cancelled = (c["job_id"] for c in body["cells"])
    harness.start_job(failed)
    harness.finish_job(failed, JobStatus.FAILED)
    harness.start_job(succeeded)
    harness.finish_job(succeeded)
    harness.client.post(f"/api/v1/jobs/{cancelled}/cancel", headers=ann)
    assert harness.client.get(f"/api/v1/experiments/{body['id']}", headers=ann).json()["state"] == "failed"
    retried = harness.client.post(f"/api/v1/experiments/{body['id']}/retry", headers=ann).json()
    assert {c["job_id"]: c["status"] for c in retried["cells"]} == {
        failed: "queued",
        succeeded: "succeeded",
        cancelled: "cancelled",
    }
    assert harness.client.post(f"/api/v1/experiments/{body['id']}/retry", headers=ann).status_code == 409
    harness.client.post(f"/api/v1/experiments/{body['id']}/notes", json={"body": "looks good"}, headers=ann)
    harness.client.post(f"/api/v1/experiments/{body['id']}/cancel", headers=ann)
    with harness.session() as session:
        actions = [e.action for e in session.scalars(select(AuditEvent)) if e.action.startswith("experiment.")]
    assert actions == ["experiment.create", "experiment.retry", "experiment.note", "experiment.cancel"]


def test_notes_are_markdown_rendered_with_raw_html_escaped(harness: Harness) -> None:
    experiment_id = _created(harness, harness.admin, ("seed", [1]))["id"]
    text = "**fast** <script>alert(1)</script> [x](javascript:alert(1))"
    added = harness.client.post(
        f"/api/v1/experiments/{experiment_id}/notes", json={"body": text}, headers=harness.admin
    )
    assert added.status_code == 201
    (note,) = harness.client.get(f"/api/v1/experiments/{experiment_id}/notes", headers=harness.admin).json()
    assert note["body"] == text
    assert note["html"] == (
        "<p><strong>fast</strong> &lt;script&gt;alert(1)&lt;/script&gt; [x](javascript:alert(1))</p>\n"
    )


def test_the_summary_rows_are_the_compare_answer_for_the_cells(harness: Harness) -> None:
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = _created(harness, harness.admin, ("executor.name", ["native", "lean_retain"]), ("seed", [1, 2]))
    speeds = {"native": [5.0, 10.0, 11.0], "lean_retain": [5.0, 13.0, 14.0]}
    for cell in sorted(body["cells"], key=lambda c: c["position"]):
        token = harness.start_job(cell["job_id"], host_id=host)
        values = speeds[cell["values"]["executor.name"]]
        steps = [{"step": i, "wall_time": 1000.0 + i, "values": {THROUGHPUT: v}} for i, v in enumerate(values)]
        reported = harness.client.post(
            f"/api/v1/ingest/{cell['job_id']}/metrics", json={"attempt": 1, "steps": steps}, headers=token
        )
        assert reported.status_code == 200
        harness.finish_job(cell["job_id"])
        _release_devices(harness, cell["job_id"])
    ids = [c["job_id"] for c in body["cells"]]
    summary = harness.client.get(f"/api/v1/experiments/{body['id']}", headers=harness.admin).json()["summary"]
    compared = harness.client.get("/api/v1/compare", params={"jobs": ",".join(map(str, ids))}, headers=harness.admin)
    assert [r["samples_per_s"] for r in summary["jobs"]] == [r["samples_per_s"] for r in compared.json()["jobs"]]
    assert [g["samples_per_s"]["mean"] for g in summary["groups"]] == [10.5, 13.5]
    assert summary["groups"][1]["speedup"]["n"] == 2
    assert summary["device_models"] == {str(i): "H100" for i in ids}
    assert summary["flags"] == []


def test_the_list_filters_by_state_and_name_and_pages(harness: Harness) -> None:
    first = _created(harness, harness.admin, ("seed", [1]))["id"]
    second = _created(harness, harness.admin, ("seed", [1, 2]))["id"]
    harness.client.post(f"/api/v1/experiments/{first}/cancel", headers=harness.admin)

    def ids(**params: Any) -> list[int]:
        page = harness.client.get("/api/v1/experiments", params=params, headers=harness.admin).json()
        return [item["id"] for item in page["items"]]

    assert ids() == [second, first]
    assert ids(state="cancelled") == [first]
    assert ids(state="queued,running") == [second]
    assert ids(limit=1, offset=1) == [first]
    assert ids(name="EX") == [second, first]
    bad = harness.client.get("/api/v1/experiments", params={"state": "done"}, headers=harness.admin)
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "state"


def test_the_report_has_the_summary_tables_in_markdown_and_in_a_page_that_fetches_nothing(harness: Harness) -> None:
    experiment_id = _created(harness, harness.admin, ("executor.name", ["native", "jagg"]))["id"]
    folder = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format=md", headers=harness.admin)
    assert folder.headers["content-type"] == "application/zip"
    assert "| group | seeds | samples/s | speedup vs native |" in _report_md(folder.content, experiment_id)
    page = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format=html", headers=harness.admin)
    assert "default-src 'none'; img-src data:" in page.text
    assert "<h2>Cell groups (mean [95% interval] over seeds)</h2><table>" in page.text


def test_the_markdown_report_quotes_names_and_notes_as_text_that_no_viewer_renders_as_markup(harness: Harness) -> None:
    name = "<img src=x onerror=alert(1)> *bold* [link](javascript:alert(1))"
    response = _create(harness, _body(("seed", [1, 2])) | {"name": name}, harness.admin)
    assert response.status_code == 201, response.text
    experiment_id = response.json()["id"]
    note = {"body": "<script>alert(1)</script>\n# a heading\n[link](javascript:alert(2))"}
    noted = harness.client.post(f"/api/v1/experiments/{experiment_id}/notes", json=note, headers=harness.admin)
    assert noted.status_code == 201, noted.text
    folder = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format=md", headers=harness.admin)
    # As a viewer that passes raw HTML through would show it: the user's text is text, never an element.
    shown = MarkdownIt("commonmark", {"html": True}).render(_report_md(folder.content, experiment_id))
    user_elements = ["<img src=x", "<script", "<em>bold", 'href="javascript', "<h1>a heading"]
    assert [element for element in user_elements if element in shown] == []
    assert "&lt;img src=x onerror=alert(1)&gt; *bold* [link](javascript:alert(1))" in shown
