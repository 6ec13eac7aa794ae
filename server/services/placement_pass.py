"""The second half of a scheduler pass: reading free devices, quotas and the queue, placing queued jobs
(the pure rules are in placement), and writing their allocations."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import Allocation, Device, Host, HostStatus, Job, JobStatus, RewardService, Team
from server.models.host import POOLS
from server.services.hosts import model_matches
from server.services.job_status import set_status
from server.services.placement import (
    FreeByHost,
    FreeDevice,
    PlacedNode,
    exclusive,
    for_job,
    head_claim,
    place,
    wait_reason,
    without_hosts,
)
from server.services.service_placement import ServiceTask, healthy_services, place_pending_services
from server.services.service_rewards import missing_service_reason


@dataclass(frozen=True)
class NodeTask:
    """One node of one job attempt, to be run by the worker on `queue`."""

    job_id: int
    attempt: int
    node_rank: int
    host: str
    queue: str

    def task_kwargs(self) -> dict[str, int]:
        return {"job_id": self.job_id, "attempt": self.attempt, "node_rank": self.node_rank}


@dataclass
class Placed:
    tasks: list[NodeTask] = field(default_factory=list)
    waiting: dict[int, str] = field(default_factory=dict)  # job id → why it waits
    services: list[ServiceTask] = field(default_factory=list)


def place_queued_jobs(session: Session) -> Placed:
    """Place queued jobs by priority, then age. The first job that cannot start (the head) claims the hosts
    it will start on; a later job is placed (backfilled) only on devices outside that claim, so it never
    delays the head. A job held back by its team's quota, or waiting for a reward service to be healthy, claims
    nothing: it could not start anyway. Pending reward services are placed first."""
    done = Placed()
    hosts = {h.id: h for h in session.scalars(select(Host).where(Host.status == HostStatus.ONLINE))}
    busy, held_whole = _held_hosts(session)
    free = without_hosts(_free_devices(session), held_whole)
    usage = _team_usage(session)
    done.services = place_pending_services(session, free, hosts, usage)
    healthy = healthy_services(session)
    quotas = {
        team.id: (team.name, team.max_devices)
        for team in session.scalars(select(Team).where(Team.max_devices.is_not(None)))
        if team.max_devices is not None
    }
    queued = session.scalars(
        select(Job)
        .where(Job.status == JobStatus.QUEUED, Job.cancel_requested.is_(False))
        .order_by(Job.priority.desc(), Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    head: Job | None = None
    claimed: set[tuple[int, str]] = set()
    capacities: dict[tuple[str, str | None], dict[int, int]] = {}

    def capacity(device_type: str, gpu_model: str | None) -> dict[int, int]:
        """One query per kind of device a pass, not one per waiting job."""
        if (device_type, gpu_model) not in capacities:
            capacities[(device_type, gpu_model)] = _host_capacity(session, device_type, gpu_model)
        return capacities[(device_type, gpu_model)]

    for job in queued:
        reason = missing_service_reason(job, healthy) or _quota_reason(job, usage, quotas)
        placement: list[PlacedNode] = []
        if reason is None:
            usable = for_job(job, free, busy)
            unclaimed = {key: devices for key, devices in usable.items() if key not in claimed}
            placement = place(job, unclaimed)
            if not placement:
                if head is not None and place(job, usable):
                    head_name = _head_name(head, job)
                    reason = f"would delay {head_name} at the head of the queue; waits for hosts it does not need"
                else:
                    reason = wait_reason(job, usable, capacity)
                    if head is None:
                        claimed = head_claim(job, free, capacity)
                        head = job if claimed else None
        if reason is not None:
            job.wait_reason = reason
            done.waiting[job.id] = reason
            continue
        job.attempt += 1
        job.wait_reason = None
        for node_rank, node in enumerate(placement):
            host = hosts[node.host_id]
            taken = {device.id for device, _ in node.devices}
            key = (host.id, job.device_type)
            free[key] = [d for d in free[key] if d.id not in taken]
            for device, pool in node.devices:
                session.add(
                    Allocation(
                        job_id=job.id,
                        attempt=job.attempt,
                        device_id=device.id,
                        host_id=host.id,
                        node_rank=node_rank,
                        pool=pool,
                    )
                )
            done.tasks.append(NodeTask(job.id, job.attempt, node_rank, host.name, host.queue))
        placed_hosts = {node.host_id for node in placement}
        busy |= placed_hosts
        if exclusive(job.spec):
            free = without_hosts(free, placed_hosts)
        if job.team_id is not None:
            usage[job.team_id] = usage.get(job.team_id, 0) + job.devices * job.nodes
        set_status(session, job, JobStatus.SCHEDULED, f"attempt {job.attempt} on {_placed_on(placement, hosts)}")
    return done


def _free_devices(session: Session) -> FreeByHost:
    """Free, enabled devices of online hosts, locked for this transaction, by (host id, device type)."""
    rows = session.execute(
        select(Device.id, Device.index, Device.model, Device.device_type, Device.host_id)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Host.status == HostStatus.ONLINE)
        .order_by(Device.host_id, Device.index)
        .with_for_update(of=Device, skip_locked=True)
    ).all()
    # Read after the locks are held: sees every allocation committed by a previous lock holder.
    held = set(session.scalars(select(Allocation.device_id).where(Allocation.released_at.is_(None))))
    free: FreeByHost = {}
    for row in rows:
        if row.id not in held:
            free.setdefault((row.host_id, row.device_type), []).append(FreeDevice(row.id, row.index, row.model))
    return free


def _held_hosts(session: Session) -> tuple[set[int], set[int]]:
    """Hosts where a device is in use now (by a job or a reward service), and those of them an exclusive job
    holds."""
    live = session.execute(
        select(Allocation.host_id, Job.spec)
        .outerjoin(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None))
    ).all()
    return {host_id for host_id, _ in live}, {host_id for host_id, spec in live if spec and exclusive(spec)}


def _host_capacity(session: Session, device_type: str, gpu_model: str | None) -> dict[int, int]:
    """Matching enabled devices per online host, free or not."""
    counts: dict[int, int] = {}
    for host_id, model in session.execute(
        select(Device.host_id, Device.model)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Device.device_type == device_type, Host.status == HostStatus.ONLINE)
    ):
        if model_matches(model, gpu_model):
            counts[host_id] = counts.get(host_id, 0) + 1
    return counts


def _team_usage(session: Session) -> dict[int, int]:
    """Devices each team's jobs and reward services hold now."""
    usage: dict[int, int] = {}
    for owner in (Job, RewardService):
        held_by = Allocation.job_id if owner is Job else Allocation.service_id
        for team_id, count in session.execute(
            select(owner.team_id, func.count(Allocation.id))
            .join(Allocation, held_by == owner.id)
            .where(Allocation.released_at.is_(None), owner.team_id.is_not(None))
            .group_by(owner.team_id)
        ):
            usage[team_id] = usage.get(team_id, 0) + count
    return usage


def _quota_reason(job: Job, usage: dict[int, int], quotas: dict[int, tuple[str, int]]) -> str | None:
    if job.team_id is None or job.team_id not in quotas:
        return None
    name, limit = quotas[job.team_id]
    need = job.devices * job.nodes
    used = usage.get(job.team_id, 0)
    if used + need <= limit:
        return None
    return f"team {name} quota: {used} of {limit} devices in use, needs {need} more"


def _head_name(head: Job, job: Job) -> str:
    """The head of the queue as the waiting job's readers may see it: by id only in the same team (the reason
    is shown to whoever sees the waiting job, and another team's job is a 404 to them)."""
    if head.team_id is not None and head.team_id == job.team_id:
        return f"job {head.id}"
    return "a higher-priority job of another team"


def _placed_on(placement: list[PlacedNode], hosts: dict[int, Host]) -> str:
    """ "alpha, beta", or with pools "alpha (rollout), beta (trainer)"."""
    names = []
    for node in placement:
        pools = sorted({pool for _, pool in node.devices if pool}, key=POOLS.index)
        names.append(hosts[node.host_id].name + (f" ({' + '.join(pools)})" if pools else ""))
    return ", ".join(names)
