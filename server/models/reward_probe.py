"""What the scheduler's probe found of a job's remote reward servers: pending, reachable or unreachable.

One row per remote reward of a job, written queued at submit and answered once, after the commit, outside the
request (server.services.reward_reachability). The answer is the only thing kept: no error, no timing.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base
from server.states import Reachability


class RewardProbe(Base):
    __tablename__ = "reward_probes"
    __table_args__ = (UniqueConstraint("job_id", "reward_index", name="uq_reward_probes_job_reward"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    reward_index: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(12), default=Reachability.PENDING, index=True)
