"""Which device type a reward service runs on: the one asked for, else one that an online host offers. A service
that no registered host could ever hold is refused at creation, since it would stay pending forever."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus
from server.services.errors import FieldErrors

# The order a default is chosen in when the request names no type: a GPU where one fits, else CPU slots.
DEVICE_TYPES = ("cuda", "cpu")
# With no host registered at all (the embedded worker may still be starting), a service waits on the trainer
# spec's own default.
UNREGISTERED_DEFAULT = "cpu"


@dataclass(frozen=True)
class HostOffer:
    """The most devices of each type on one host: over every host not disabled (a lost one may come back), and
    over the online ones."""

    registered: dict[str, int]
    online: dict[str, int]
    any_host: bool

    def describe(self) -> str:
        """What the hosts offer, as `cpu (up to 4 on one host)`, or that no host offers any."""
        offered = [f"{kind} (up to {count} on one host)" for kind, count in sorted(self.registered.items())]
        return ", ".join(offered) or "none (every registered host is disabled)"


def host_offer(session: Session) -> HostOffer:
    per_host = (
        select(Device.device_type, Device.host_id, Host.status, func.count().label("devices"))
        .join(Host, Host.id == Device.host_id)
        .where(
            Host.admin_state != AdminState.DISABLED,
            Host.status != HostStatus.DISABLED,
            Device.enabled.is_(True),
        )
        .group_by(Device.device_type, Device.host_id, Host.status)
    )
    registered: dict[str, int] = {}
    online: dict[str, int] = {}
    for kind, _host_id, status, count in session.execute(per_host):
        registered[kind] = max(registered.get(kind, 0), count)
        if status == HostStatus.ONLINE:
            online[kind] = max(online.get(kind, 0), count)
    any_host = bool(registered) or session.scalar(select(func.count()).select_from(Host)) != 0
    return HostOffer(registered, online, any_host)


def default_device_type(offer: HostOffer, devices: int) -> str | None:
    """The first type an online host has `devices` of, else the first a registered host has; None when none has."""
    for largest in (offer.online, offer.registered):
        for kind in DEVICE_TYPES:
            if largest.get(kind, 0) >= devices:
                return kind
    return None if offer.any_host else UNREGISTERED_DEFAULT


def service_device_type(session: Session, requested: str | None, devices: int) -> str:
    """The type the service will hold `devices` of on one host, or a 422 naming `device_type` (no host offers
    the type) or `devices` (none has that many), with what the hosts offer."""
    offer = host_offer(session)
    if requested is None:
        chosen = default_device_type(offer, devices)
        if chosen is None:
            raise FieldErrors.one(
                "devices", f"asks for {devices} devices on one host; the hosts offer {offer.describe()}"
            )
        return chosen
    if not offer.any_host:
        return requested
    largest = offer.registered.get(requested, 0)
    if largest == 0:
        raise FieldErrors.one(
            "device_type", f"no registered host offers {requested} devices; offered: {offer.describe()}"
        )
    if devices > largest:
        raise FieldErrors.one(
            "devices", f"asks for {devices} {requested} devices on one host; the largest has {largest}"
        )
    return requested
