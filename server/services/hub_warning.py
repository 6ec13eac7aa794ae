"""A warning at submit time: the spec names a model on the hub, and every worker that could run it runs with
the hub off (HF_HUB_OFFLINE), so the trainer would fail to download it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus
from trainer.spec import names_hub_model


def hub_model_warning(session: Session, model_path: str, device_type: str) -> str | None:
    """The warning, or None: a local or built-in model, no worker of the job's device type yet, or one of them
    can reach the hub."""
    if not names_hub_model(model_path):
        return None
    offline = set(
        session.execute(
            select(Host.id, Host.hub_offline)
            .join(Device, Device.host_id == Host.id)
            .where(
                Host.admin_state != AdminState.DISABLED,
                Host.status != HostStatus.DISABLED,
                Device.enabled.is_(True),
                Device.device_type == device_type,
            )
        )
    )
    if not offline or not all(hub_off for _host, hub_off in offline):
        return None
    return (
        f"model.path {model_path!r} is a model hub id, but every worker that could run this job runs "
        "offline (HF_HUB_OFFLINE): the trainer cannot download it. Give a local model folder, or start a worker "
        "that can reach the hub."
    )
