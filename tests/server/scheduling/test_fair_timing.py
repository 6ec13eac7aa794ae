"""Fair timing at the scheduler: an experiment's cells run one at a time on hosts of one device model, and no
other job ran on a cell's host while the cell ran (the allocation history says so), whatever else is queued."""

from __future__ import annotations

from scheduler_passes import AddHost, AddJob, finish, run_pass
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.models import Allocation, Device, Job, Membership, Team, User
from server.schemas.experiments import AxisIn, ExperimentCreate
from server.services.auth import Caller, TeamRole
from server.services.experiments import create_experiment
from server.services.shared_hosts import shared_with


def _caller(factory: sessionmaker[Session]) -> Caller:
    with factory.begin() as session:
        team, user = Team(name="lab"), User(username="ann")
        session.add_all([team, user])
        session.flush()
        session.add(Membership(user_id=user.id, team_id=team.id, role="member"))
        return Caller(user.id, "ann", False, (TeamRole(team.id, "lab", "member"),))


def _running(factory: sessionmaker[Session]) -> list[Job]:
    with factory() as session:
        return list(session.scalars(select(Job).where(Job.status.in_(["scheduled", "running"]))))


def test_no_other_job_runs_on_a_cells_host_while_the_cell_runs(
    factory: sessionmaker[Session], add_host: AddHost, add_job: AddJob, tmp_path
) -> None:
    add_host("alpha", devices=2, model="Test CPU")
    add_host("beta", devices=2, model="Test CPU")
    add_host("odd", devices=2, model="Other CPU")
    caller = _caller(factory)
    request = ExperimentCreate(
        name="exp",
        spec={"name": "base"},
        axes=[AxisIn(path="executor.name", values=["native", "lean_retain"]), AxisIn(path="seed", values=[1, 2])],
    )
    with factory() as session:
        experiment = create_experiment(session, caller, request, Settings(home=tmp_path, path_roots=[]))
    assert experiment.gpu_model == "Test CPU"
    cells = {cell.job_id for cell in experiment.cells}
    others = {add_job(devices=1).id for _ in range(6)}  # plain jobs queued behind and beside the cells
    for _ in range(20):  # passes until everything ran, each pass ending whatever was running
        run_pass(factory)
        running = _running(factory)
        if not running:
            break
        for job in running:
            finish(factory, job.id)
    with factory() as session:
        statuses = {job.id: job.status for job in session.scalars(select(Job))}
        models = dict(
            session.execute(
                select(Allocation.job_id, Device.model).join(Device, Device.id == Allocation.device_id)
            ).all()
        )
        shared = shared_with(session, sorted(cells))
    assert all(statuses[i] == "succeeded" for i in cells | others)
    assert {models[i] for i in cells} == {"Test CPU"}
    assert shared == {i: [] for i in sorted(cells)}
