"""DigenRL's two pools: each on devices of its own GPU model, on one host or two, rollout pool first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Host, Job
from server.services import job_runs
from server.services.capacity import check_capacity
from server.services.errors import FieldErrors
from server.services.hosts import DeviceInfo, register_host
from server.services.placement_pass import NodeTask
from server.services.scheduler import PassReport, schedule_once
from trainer.spec import parse_spec

AddHost = Callable[..., Host]
AddJob = Callable[..., Job]

L40S = "NVIDIA L40S"
H100 = "NVIDIA H100 80GB HBM3"
POOLS = {"rollout": {"devices": 2, "gpu_model": "L40S"}, "trainer": {"devices": 2, "gpu_model": "H100"}}


def run_pass(factory: sessionmaker[Session], sent: list[NodeTask]) -> PassReport:
    return schedule_once(factory, sent.append, 30.0)


def add_mixed_host(factory: sessionmaker[Session], name: str, models: list[str]) -> None:
    with factory.begin() as session:
        register_host(session, name, [DeviceInfo(i, "cuda", model, None) for i, model in enumerate(models)])


def pools_by_host(factory: sessionmaker[Session], job_id: int) -> dict[tuple[int, str, str | None], list[int]]:
    """(node rank, host, pool) → device indices of the job's live allocations."""
    placed: dict[tuple[int, str, str | None], list[int]] = {}
    with factory() as session:
        for allocation in session.scalars(select(Allocation).where(Allocation.job_id == job_id)):
            key = (allocation.node_rank, allocation.host.name, allocation.pool)
            placed.setdefault(key, []).append(allocation.device.index)
    return {key: sorted(indices) for key, indices in placed.items()}


def wait_reason(factory: sessionmaker[Session], job_id: int) -> str | None:
    with factory() as session:
        return session.get(Job, job_id).wait_reason


def plan(factory: sessionmaker[Session], task: NodeTask, root: Path) -> job_runs.RunPlan:
    with factory.begin() as session:
        found = job_runs.start_run(
            session, task.job_id, task.attempt, task.node_rank, task.host, root, node_token_key=b"k"
        )
    assert found is not None
    return found


def test_pools_of_two_gpu_models_go_to_their_hosts_with_the_rollout_pool_as_node_0(
    factory, add_host: AddHost, add_job: AddJob, tmp_path: Path
):
    add_host("h100-box", devices=2, device_type="cuda", model=H100)
    add_host("l40s-box", devices=2, device_type="cuda", model=L40S)
    job = add_job(device_type="cuda", pools=POOLS)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert [(t.node_rank, t.host) for t in sent] == [(0, "l40s-box"), (1, "h100-box")]
    assert pools_by_host(factory, job.id) == {(0, "l40s-box", "rollout"): [0, 1], (1, "h100-box", "trainer"): [0, 1]}
    rollout_node, trainer_node = plan(factory, sent[0], tmp_path), plan(factory, sent[1], tmp_path)
    assert (rollout_node.nnodes, len(rollout_node.device_indices)) == (2, 2)
    assert rollout_node.rendezvous_endpoint == trainer_node.rendezvous_endpoint is not None


def test_both_pools_share_a_host_with_both_models_and_list_the_rollout_devices_first(
    factory, add_job: AddJob, tmp_path: Path
):
    add_mixed_host(factory, "mixed", [H100, H100, L40S, L40S])
    job = add_job(device_type="cuda", pools=POOLS)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert [(t.node_rank, t.host) for t in sent] == [(0, "mixed")]
    assert pools_by_host(factory, job.id) == {(0, "mixed", "rollout"): [2, 3], (0, "mixed", "trainer"): [0, 1]}
    node = plan(factory, sent[0], tmp_path)
    assert (node.nnodes, node.device_indices) == (1, [2, 3, 0, 1])  # local ranks 0-1 are the rollout pool


def test_a_pool_job_waits_naming_the_pool_whose_gpu_model_no_host_has(factory, add_host: AddHost, add_job: AddJob):
    add_host("l40s-box", devices=4, device_type="cuda", model=L40S)
    job = add_job(device_type="cuda", pools=POOLS)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert sent == []
    assert wait_reason(factory, job.id) == (
        "trainer pool needs 2 cuda devices of model 'H100' on one host; the largest online host has 0"
    )


def test_a_pool_job_waits_while_a_pool_s_host_is_busy_then_starts(factory, add_host: AddHost, add_job: AddJob):
    add_host("h100-box", devices=2, device_type="cuda", model=H100)
    add_host("l40s-box", devices=2, device_type="cuda", model=L40S)
    busy = add_job(devices=1, device_type="cuda", gpu_model="L40S")
    run_pass(factory, [])
    job = add_job(device_type="cuda", pools=POOLS)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert sent == []
    assert wait_reason(factory, job.id) == (
        "rollout pool needs 2 cuda devices of model 'L40S' on one host; the largest free host has 1"
    )
    with factory.begin() as session:
        session.get(Job, busy.id).status = "succeeded"
    run_pass(factory, sent)
    assert {t.host for t in sent} == {"l40s-box", "h100-box"}


def test_a_pool_no_registered_host_could_hold_is_refused_at_submission_naming_it(factory, add_host: AddHost):
    add_host("l40s-box", devices=4, device_type="cuda", model=L40S)
    spec = parse_spec(
        {
            "executor": {"name": "digenrl"},
            "resources": {"device_type": "cuda", "pools": POOLS},
        }
    )

    with factory() as session, pytest.raises(FieldErrors) as refused:
        check_capacity(session, spec)

    [error] = refused.value.args[0]
    assert error["field"] == "resources.pools.trainer.devices"
    assert "2 cuda devices of model 'H100' on one host; the largest registered host has 0" in error["message"]
