"""The compare page renders the compare service's answer and warns when compared jobs shared a host; "Run side
by side" submits exclusive jobs to compare."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of
from sqlalchemy import func, select

from server.models import Allocation, Device, Job, RewardProbe, User, utcnow


def _url(ids: list[int]) -> str:
    return "/compare?" + "&".join(f"job={i}" for i in ids)


def test_compared_jobs_that_shared_a_host_are_named_in_a_warning(
    client: TestClient, world: World, app: FastAPI
) -> None:
    beside = world.finished[0]
    with app.state.sessionmaker() as session:  # it held a device of the running job's host while that ran
        held = select(Allocation.device_id).where(Allocation.job_id == world.running.id)
        device = session.scalars(select(Device).where(Device.id.not_in(held))).first()
        assert device is not None
        session.add(
            Allocation(job_id=beside.id, attempt=1, device_id=device.id, host_id=device.host_id, released_at=utcnow())
        )
        session.commit()
    html = client.get(_url([world.running.id, beside.id])).text
    warning = html.split('id="shared-hosts"', 1)[1].split("</div>", 1)[0]
    assert f"#{world.running.id} {world.running.name} shared gpu-node-1 with" in warning
    assert f'<a href="/jobs/{beside.id}">#{beside.id} {beside.name}</a>' in warning


def test_jobs_that_ran_alone_carry_no_shared_host_warning(client: TestClient, world: World) -> None:
    html = client.get(_url([j.id for j in world.finished])).text
    assert 'id="shared-hosts"' not in html


def test_run_side_by_side_submits_each_executor_exclusive_and_opens_their_comparison(
    client: TestClient, world: World, app: FastAPI
) -> None:
    page = client.get(f"/jobs/{world.running.id}").text
    response = client.post(
        f"/jobs/{world.running.id}/side-by-side",
        data={"csrf_token": csrf_of(page), "executor": ["native", "lean_retain"]},
    )
    assert response.status_code == 303, response.text[-3000:]
    ids = [int(i) for i in re.findall(r"job=(\d+)", response.headers["location"])]
    with app.state.sessionmaker() as session:
        jobs = [session.get_one(Job, i) for i in ids]
    assert [job.executor for job in jobs] == ["native", "lean_retain"]
    assert all(job.spec["resources"]["exclusive"] is True and job.status == "queued" for job in jobs)
    assert world.running.name == "sd3-brightness-native"
    assert [job.name for job in jobs] == ["sd3-brightness-native", "sd3-brightness-lean_retain"]


def test_run_side_by_side_with_an_unknown_executor_stores_nothing(
    client: TestClient, world: World, app: FastAPI
) -> None:
    with app.state.sessionmaker() as session:
        before = session.scalar(select(func.count()).select_from(Job))
    page = client.get(f"/jobs/{world.running.id}").text
    response = client.post(
        f"/jobs/{world.running.id}/side-by-side", data={"csrf_token": csrf_of(page), "executor": ["native", "warp"]}
    )
    assert response.status_code == 422 and "not &#39;warp&#39;" in response.text
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == before


def test_run_side_by_side_beyond_the_queue_limit_is_429_naming_it_and_stores_nothing(
    client: TestClient, world: World, app: FastAPI
) -> None:
    with app.state.sessionmaker() as session:
        before = session.scalar(select(func.count()).select_from(Job))
        ada = session.scalar(select(User.id).where(User.username == "ada"))
        queued = session.scalar(select(func.count()).where(Job.status == "queued", Job.owner_id == ada))
    app.state.settings.max_queued_per_user = queued + 1  # room for one of the two
    page = client.get(f"/jobs/{world.running.id}").text
    response = client.post(
        f"/jobs/{world.running.id}/side-by-side",
        data={"csrf_token": csrf_of(page), "executor": ["native", "lean_retain"]},
    )
    assert response.status_code == 429 and "SFUMATO_MAX_QUEUED_PER_USER" in response.text
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == before


def test_run_side_by_side_queues_a_reward_probe_for_each_new_job_as_submit_does(
    client: TestClient, world: World, app: FastAPI
) -> None:
    remote = {"name": "remote", "url": "http://reward.example.com:8000", "weight": 1.0}
    with app.state.sessionmaker() as session:
        job = session.get_one(Job, world.running.id)
        job.spec = {**job.spec, "reward": [remote]}
        session.commit()
    page = client.get(f"/jobs/{world.running.id}").text
    response = client.post(
        f"/jobs/{world.running.id}/side-by-side",
        data={"csrf_token": csrf_of(page), "executor": ["native", "lean_retain"]},
    )
    assert response.status_code == 303, response.text[-3000:]
    ids = [int(i) for i in re.findall(r"job=(\d+)", response.headers["location"])]
    with app.state.sessionmaker() as session:
        probed = session.scalars(select(RewardProbe.job_id).where(RewardProbe.job_id.in_(ids))).all()
    assert sorted(probed) == sorted(ids)


def test_the_eval_reward_is_the_mean_of_each_eval_step_s_samples_and_compare_shows_the_last(
    client: TestClient, world: World
) -> None:
    body = client.get(f"/api/v1/jobs/{world.running.id}/samples/eval-rewards").json()
    assert body["steps"] == [0, 5, 10, 15, 20, 25]
    # Each step: three prompts x seeds 0 and 1, reward 0.3 + step / 100 + seed / 50.
    assert body["values"] == [pytest.approx(0.3 + step / 100 + 0.01) for step in body["steps"]]
    row = client.get(f"/api/v1/compare?jobs={world.running.id}").json()["jobs"][0]
    assert (row["eval_step"], row["eval_reward"]) == (25, body["values"][-1])


def test_the_spec_differences_table_carries_its_legend(client: TestClient, world: World) -> None:
    html = client.get(_url([j.id for j in world.finished])).text
    legend = html.split('class="muted diff-legend"', 1)[1].split("</p>", 1)[0]
    assert "— where the job&#39;s spec has no such field" in legend and "null where the field is there" in legend
