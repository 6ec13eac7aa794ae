"""A warning at submit time: the spec names a model on the hub, and no worker that could run it can reach the hub
(it runs with the hub off, HF_HUB_OFFLINE, or its probe at registration found no network), so the trainer would
fail to download it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus
from trainer.spec import names_hub_model


def hub_model_warning(session: Session, model_path: str, device_type: str) -> str | None:
    """The warning, or None: a local or built-in model, no worker of the job's device type yet, or one of them
    can reach the hub. It names the workers that cannot."""
    if not names_hub_model(model_path):
        return None
    offline = set(
        session.execute(
            select(Host.name, Host.hub_offline)
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
    hosts = ", ".join(sorted(name for name, _ in offline))
    return (
        f"model.path {model_path!r} is a model hub id, but no worker that could run this job can reach the hub "
        f"({hosts}: HF_HUB_OFFLINE is set, or no network when the worker registered): the trainer cannot download "
        "it. Give a local model folder, or start a worker that can reach the hub."
    )
