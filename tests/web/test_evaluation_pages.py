"""Evaluations on the pages: the job page's table of its checkpoints' evaluations and a model version's table show
the figures the platform stored (services.evaluation_reads), the same as the API's answer."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World
from sqlalchemy import select
from test_model_pages import add_checkpoints, register

from server.models import Artifact, Evaluation, EvaluationReward, Job, utcnow
from web.pages.render import num


def reported_evaluation(app: FastAPI, job_id: int, step: int, mean: float) -> int:
    """An evaluation job of the job's checkpoint at `step` (its artifact, when the job has one there) that reported
    `mean` for prompt_color_match."""
    with app.state.sessionmaker() as session:
        source = session.get_one(Job, job_id)
        task_job = Job(name=f"eval at {step}", spec=source.spec, owner_id=source.owner_id, team_id=source.team_id,
                       kind="eval", status="succeeded", algorithm="flow_grpo", executor="native",
                       model_family="sd3", device_type="cpu", devices=1)  # fmt: skip
        session.add(task_job)
        session.flush()
        artifact_id = session.scalar(select(Artifact.id).where(Artifact.job_id == job_id, Artifact.step == step))
        evaluation = Evaluation(job_id=task_job.id, source_job_id=job_id, source_artifact_id=artifact_id, step=step,
                                prompt_set="builtin:shapes-heldout", seeds_per_prompt=1, reported_at=utcnow(),
                                prompts=["a", "b"])  # fmt: skip
        evaluation.rewards.append(
            EvaluationReward(name="prompt_color_match", mean=mean, std=0.125, n=2, per_prompt=[mean, mean])
        )
        session.add(evaluation)
        session.commit()
        return task_job.id


def test_the_job_page_lists_its_checkpoints_evaluations_with_their_figures(
    client: TestClient, app: FastAPI, world: World
) -> None:
    eval_job = reported_evaluation(app, world.running.id, 20, 0.5432)
    page = client.get(f"/jobs/{world.running.id}").text
    section = page.split('<section id="evaluations">', 1)[1].split("</section>", 1)[0]
    row = section.split("<tbody>", 1)[1]
    assert "step 20" in row and "prompt_color_match" in row and f"#{eval_job}" in row
    api = client.get(f"/api/v1/jobs/{world.running.id}/evaluations").json()["items"][0]["rewards"][0]
    assert num(api["mean"], 4) in row and num(api["std"], 4) in row


def test_a_model_version_shows_the_evaluations_of_its_checkpoint_only(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10, 20])
    target = register(client, world.running.id, "sunset", 10)
    reported_evaluation(app, world.running.id, 10, 0.6125)
    reported_evaluation(app, world.running.id, 20, 0.3875)
    version = client.get(target).text.split('id="version-1"', 1)[1].split("</article>", 1)[0]
    assert num(0.6125, 4) in version and num(0.3875, 4) not in version
