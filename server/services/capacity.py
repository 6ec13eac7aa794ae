"""Refuse at submission a job no registered host could ever run, instead of letting it queue forever."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus
from server.services.errors import FieldErrors
from server.services.hosts import model_matches
from trainer.spec import JobSpec


def usable_devices(session: Session, device_type: str) -> list[tuple[int, str]]:
    """(host id, model) of each enabled device of the type on a host that neither an admin nor the host itself
    has disabled: what a job could ever be placed on."""
    rows = session.execute(
        select(Device.host_id, Device.model)
        .join(Host, Host.id == Device.host_id)
        .where(
            Host.admin_state != AdminState.DISABLED,
            Host.status != HostStatus.DISABLED,
            Device.enabled.is_(True),
            Device.device_type == device_type,
        )
    )
    return [(host_id, model) for host_id, model in rows]


def matching_per_host(session: Session, device_type: str, gpu_model: str | None) -> list[int]:
    """Enabled devices of the type and model on each host not disabled by an admin, largest first."""
    counts: dict[int, int] = {}
    for host_id, model in usable_devices(session, device_type):
        if model_matches(model, gpu_model):
            counts[host_id] = counts.get(host_id, 0) + 1
    return sorted(counts.values(), reverse=True)


def _kind(device_type: str, gpu_model: str | None) -> str:
    return f"{device_type} devices" + (f" of model {gpu_model!r}" if gpu_model else "")


def check_capacity(session: Session, spec: JobSpec) -> None:
    """Enough non-disabled hosts must each have `devices` matching devices (each pool's on one host);
    no hosts at all is accepted: the embedded worker may still be starting, and the job waits.

    Models match as the scheduler matches them: case-insensitively, by substring ("a100" matches
    "NVIDIA A100-SXM4-40GB").
    """
    if session.scalar(select(func.count()).select_from(Host)) == 0:
        return
    res = spec.resources
    if res.pools is not None:
        for name, pool in (("rollout", res.pools.rollout), ("trainer", res.pools.trainer)):
            largest = max(matching_per_host(session, res.device_type, pool.gpu_model), default=0)
            if pool.devices > largest:
                raise FieldErrors.one(
                    f"resources.pools.{name}.devices",
                    f"the {name} pool asks for {pool.devices} {_kind(res.device_type, pool.gpu_model)} on one host; "
                    f"the largest registered host has {largest}",
                )
        return
    sizes = matching_per_host(session, res.device_type, res.gpu_model)
    kind = _kind(res.device_type, res.gpu_model)
    largest = sizes[0] if sizes else 0
    if res.devices > largest:
        raise FieldErrors.one(
            "resources.devices",
            f"asks for {res.devices} {kind} per node ({res.devices * res.nodes} in all); "
            f"the largest registered host has {largest}",
        )
    fitting = sum(1 for size in sizes if size >= res.devices)
    if res.nodes > fitting:
        raise FieldErrors.one(
            "resources.nodes",
            f"asks for {res.nodes} nodes with {res.devices} {kind} each; {fitting} registered hosts have that many",
        )
