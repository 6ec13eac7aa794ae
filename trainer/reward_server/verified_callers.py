"""Callers the platform accepted lately, honoured while its caller check cannot be asked (docs/rewards.md).

Restarting the control plane (an upgrade) must not fail the jobs that score here: while the caller check does not
answer, a token the platform accepted within the outage window is still served, even after the platform's own
answer has run out; a token it has not accepted in that time (a new caller, one it refused) is refused with 503,
which the trainer waits out. Once the platform answers again, its answers decide as before.
"""

from __future__ import annotations

import logging

from trainer.spec.sections import REMOTE_DEFAULTS

OUTAGE_WINDOW_S = float(REMOTE_DEFAULTS["outage_window_s"])  # as long as a trainer waits for a reward server
MAX_REMEMBERED = 10_000  # accepted tokens kept; ones older than the window are dropped beyond this

log = logging.getLogger(__name__)


class VerifiedCallers:
    def __init__(self, window_s: float = OUTAGE_WINDOW_S) -> None:
        self.window_s = window_s
        self.accepted_at: dict[str, float] = {}  # sha256(token) → when the platform last accepted it
        self.outage_since: float | None = None

    def record(self, key: str, accepted: bool, now: float) -> None:
        """The platform answered: remember an acceptance, forget a refusal (an ended job, a revoked token)."""
        if self.outage_since is not None:
            log.warning("the platform's caller check answers again after %.0f s", now - self.outage_since)
            self.outage_since = None
        if not accepted:
            self.accepted_at.pop(key, None)
            return
        if len(self.accepted_at) >= MAX_REMEMBERED:
            self.accepted_at = {k: t for k, t in self.accepted_at.items() if now - t <= self.window_s}
        self.accepted_at[key] = now

    def honours(self, key: str, now: float, problem: str) -> bool:
        """The platform cannot be asked (`problem`): whether it accepted this token within the window."""
        if self.outage_since is None:
            self.outage_since = now
            log.warning("%s; honouring callers it accepted in the last %g s, refusing others", problem, self.window_s)
        accepted_at = self.accepted_at.get(key)
        return accepted_at is not None and now - accepted_at <= self.window_s
