"""Team quotas in scheduler passes, on SQLite and PostgreSQL: a quota counts every device a team holds (each node
of a multi-node job, and its reward services), and a job held back by its quota or that no host could ever hold
claims nothing, so the jobs behind it still run."""

from __future__ import annotations

from scheduler_passes import AddHost, AddJob, finish, job, run_pass
from sqlalchemy.orm import Session, sessionmaker

from server.models import RewardService, Team
from server.services.placement_pass import NodeTask
from server.services.service_placement import ServiceTask


def _team(factory: sessionmaker[Session], name: str, max_devices: int | None = None) -> int:
    with factory.begin() as session:
        team = Team(name=name, max_devices=max_devices)
        session.add(team)
        session.flush()
        return team.id


def test_a_multi_node_job_counts_its_devices_on_every_node_against_the_quota(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    add_host("beta", devices=2)
    capped = _team(factory, "capped", max_devices=3)
    two_nodes = add_job(devices=2, nodes=2, team_id=capped)

    report = run_pass(factory)

    assert report.waiting == {two_nodes.id: "team capped quota: 0 of 3 devices in use, needs 4 more"}


def test_a_placed_multi_node_job_holds_all_its_devices_of_the_quota_in_its_pass_and_after(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    add_host("beta", devices=2)
    add_host("gamma", devices=1)
    capped = _team(factory, "capped", max_devices=4)
    two_nodes = add_job(devices=2, nodes=2, team_id=capped)
    one_more = add_job(devices=1, team_id=capped)
    full = {one_more.id: "team capped quota: 4 of 4 devices in use, needs 1 more"}

    assert run_pass(factory).waiting == full
    assert job(factory, two_nodes.id).status == "scheduled"
    assert run_pass(factory).waiting == full


def test_a_team_s_reward_service_devices_count_against_its_quota(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=3)
    capped = _team(factory, "capped", max_devices=2)
    with factory.begin() as session:
        session.add(RewardService(name="judge", team_id=capped, reward="brightness", device_type="cpu", devices=1))
    sent: list[NodeTask | ServiceTask] = []
    run_pass(factory, sent)
    assert [type(task) for task in sent] == [ServiceTask]
    wants_two = add_job(devices=2, team_id=capped)

    report = run_pass(factory)

    assert report.waiting == {wants_two.id: "team capped quota: 1 of 2 devices in use, needs 2 more"}


def test_a_job_held_by_its_quota_claims_no_host_so_a_later_job_takes_it(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=2)
    capped = _team(factory, "capped", max_devices=1)
    held = add_job(devices=2, priority=9, team_id=capped)
    later = add_job(devices=2, priority=0, team_id=_team(factory, "open"))
    sent: list[NodeTask] = []

    report = run_pass(factory, sent)

    assert [task.job_id for task in sent] == [later.id]
    assert set(report.waiting) == {held.id}


def test_a_head_no_host_could_ever_hold_claims_nothing_so_later_jobs_run(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    never_fits = add_job(devices=3, priority=9)
    later = add_job(devices=2)
    sent: list[NodeTask] = []

    report = run_pass(factory, sent)

    assert [task.job_id for task in sent] == [later.id]
    assert set(report.waiting) == {never_fits.id}
    assert "would delay" not in report.waiting[never_fits.id]


def test_a_head_that_will_fit_claims_its_host_against_later_jobs(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=2)
    running = add_job(devices=1)
    run_pass(factory)
    head = add_job(devices=2, priority=9)
    later = add_job(devices=1)

    report = run_pass(factory)

    assert set(report.waiting) == {head.id, later.id}
    assert report.waiting[later.id].startswith("would delay ")
    finish(factory, running.id)
    sent: list[NodeTask] = []
    run_pass(factory, sent)
    assert [task.job_id for task in sent] == [head.id]
