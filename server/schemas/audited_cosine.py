"""The audited cosine shown next to a class-A executor's speedup: what its speed costs in fidelity."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from server.schemas.common import FiniteOrNone

AuditSource = Literal["first_step_audit", "advisor_probe", "not_audited"]


class AuditedCosine(BaseModel):
    """A class-A job's gradient cosine against native's for its spec (see the compare answer's
    definitions.audited_cosine); ``text`` is what every face prints."""

    source: AuditSource
    cosine: FiniteOrNone = Field(description="null when not audited, or when the audit failed on a NaN figure")
    rel_l2: FiniteOrNone = Field(description="relative L2 distance to native's gradient")
    failed: bool = Field(description="the audit's verdict was fail (a NaN or infinite figure fails)")
    advice_id: int | None = Field(None, description="the advice whose probe measured it (source advisor_probe)")
    text: str = Field(description="e.g. 'cosine 0.995 (first-step audit)', 'audit failed', 'not audited'")
