"""Refuse at submission a job no registered host could ever run, instead of letting it queue forever."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import Device, Host
from server.services.errors import FieldErrors
from trainer.spec import JobSpec


def check_capacity(session: Session, spec: JobSpec) -> None:
    """Enough non-disabled hosts must each have `devices` matching devices; no hosts at all is accepted.

    With no host registered yet (the embedded worker may still be starting) the job waits.
    """
    if session.scalar(select(func.count()).select_from(Host)) == 0:
        return
    res = spec.resources
    wanted = Device.device_type == res.device_type
    if res.gpu_model is not None:
        wanted &= Device.model == res.gpu_model
    per_host = session.execute(
        select(Host.name, func.count(Device.id))
        .join(Device, Device.host_id == Host.id)
        .where(Host.status != "disabled", Device.enabled.is_(True), wanted)
        .group_by(Host.name)
    ).all()
    sizes = sorted((count for _name, count in per_host), reverse=True)
    kind = f"{res.device_type} devices" + (f" of model {res.gpu_model!r}" if res.gpu_model else "")
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
