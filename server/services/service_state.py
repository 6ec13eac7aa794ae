"""The one place a reward service changes state, so every change follows the transition table
(server.states.SERVICE_TRANSITIONS), and a service that frees devices or becomes healthy wakes the scheduler."""

from sqlalchemy.orm import Session

from server.models import SERVICE_TRANSITIONS, RewardService, ServiceState, utcnow
from server.services.errors import Conflict
from server.services.scheduler_wakeup import wake_scheduler

# States after which the scheduler has something new to do: devices freed, or jobs that waited may start.
_WAKES = (ServiceState.PENDING, ServiceState.HEALTHY, ServiceState.STOPPED, ServiceState.FAILED)


class IllegalServiceTransition(Conflict):
    def __init__(self, service: RewardService, wanted: ServiceState) -> None:
        allowed = ", ".join(sorted(SERVICE_TRANSITIONS[ServiceState(service.state)])) or "nothing"
        super().__init__(
            f"service {service.name!r} cannot go from {service.state} to {wanted}; "
            f"from {service.state} it may go to: {allowed}"
        )


def set_state(session: Session, service: RewardService, state: ServiceState) -> None:
    """Move `service` to `state`; IllegalServiceTransition when the table does not allow it."""
    if state not in SERVICE_TRANSITIONS[ServiceState(service.state)]:
        raise IllegalServiceTransition(service, state)
    service.state = state
    if state in (ServiceState.STOPPED, ServiceState.FAILED):
        service.stopped_at = utcnow()
        service.url = None
    if state == ServiceState.PENDING:
        service.url = None
        service.host_id = None
    if state in _WAKES:
        wake_scheduler(session)
