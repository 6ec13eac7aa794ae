"""The ingestion payload: what the trainer's reporter sends and the server's ingestion endpoints accept.

One definition for both sides (docs/contracts.md): the reporter builds its events with these models and the
server validates request bodies with them. Torch-free and server-free (pydantic only), so the server may import
it. A re-sent body stores nothing twice: a metric point is stored once under (job, key, step, attempt), a
sample once under (attempt, step, kind, prompt, seed), progress keeps the latest values.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

MAX_INT32 = 2**31 - 1


def _finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


# A NaN reward or throughput (a diverged run) is reported as unknown rather than refused.
FiniteOrNone = Annotated[float | None, AfterValidator(_finite_or_none)]
Step = Annotated[int, Field(ge=0, le=MAX_INT32)]
# Seconds since the epoch, up to the year 3000: an infinite or absurd wall time (which broke every duration
# computed from it) is refused with 422, naming the field.
MAX_WALL_TIME = 32_503_680_000.0
WallTime = Annotated[float, Field(ge=0, le=MAX_WALL_TIME, allow_inf_nan=False)]
Attempt = Annotated[int, Field(ge=1, le=10_000)]
# The `code` of the 409 answering a report of an attempt that is over: its reporter stops.
ATTEMPT_SUPERSEDED_CODE = "attempt_superseded"
MetricKey = Annotated[str, Field(min_length=1, max_length=200)]
SampleKind = Literal["eval", "train"]
# An export's `name` is its format and its `step` the checkpoint's step; a playground artifact is its image grid.
ArtifactKind = Literal["checkpoint", "model", "export", "playground"]
# How the bytes of an artifact are laid: a file as it is, a folder as one uncompressed tar stream.
ArtifactPacking = Literal["file", "tar"]
Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256, 64 lowercase hex digits")]
# The headers of the resumable upload (docs/artifacts.md; tus 1.0's offset protocol).
UPLOAD_OFFSET_HEADER = "Upload-Offset"
UPLOAD_CONTENT_TYPE = "application/offset+octet-stream"


class MetricStep(BaseModel):
    step: Step
    wall_time: WallTime
    # Non-finite values are accepted and skipped (a NaN loss must not cost the batch's other points).
    values: dict[MetricKey, float]


class MetricBatch(BaseModel):
    """`POST /api/v1/ingest/{job_id}/metrics`: the steps of one attempt."""

    attempt: Attempt
    steps: list[MetricStep]

    @property
    def point_count(self) -> int:
        return sum(len(s.values) for s in self.steps)


class ProgressReport(BaseModel):
    """`POST .../progress`: where training is; also the trainer's heartbeat."""

    attempt: Attempt
    step: Step
    total_steps: Step
    reward: FiniteOrNone = None
    samples_per_s: FiniteOrNone = Field(None, ge=0)


class ArtifactRecord(BaseModel):
    """`POST .../artifacts`: a checkpoint or final model the trainer wrote."""

    attempt: Attempt
    kind: ArtifactKind
    name: str = Field(min_length=1, max_length=200)
    step: Step | None = None
    path: str = Field(min_length=1, max_length=400, description="relative to the trainer's --output-dir")


class ArtifactUploadDone(BaseModel):
    """`POST .../artifacts/{id}/upload/complete`: the bytes sent make the whole file (or the folder's tar stream),
    of this size and SHA-256; anything else is refused and the artifact keeps its earlier state."""

    size: int = Field(ge=0, le=2**50)
    sha256: Sha256Hex
    packing: ArtifactPacking = "file"


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) an uploaded or downloaded artifact is checked with, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class SampleForm(BaseModel):
    """`POST .../samples`: the form fields sent with a sample's image (file field `image`, PNG or WebP)."""

    attempt: Attempt
    step: Step
    kind: SampleKind = "eval"
    prompt: str = Field(max_length=10_000)
    seed: int = Field(ge=-(2**63), le=2**63 - 1)
    reward: FiniteOrNone = None

    def form_fields(self) -> dict[str, str]:
        """The multipart text fields; a reward is left out when unknown."""
        fields = {"attempt": str(self.attempt), "step": str(self.step), "kind": self.kind, "prompt": self.prompt}
        fields["seed"] = str(self.seed)
        if self.reward is not None:
            fields["reward"] = repr(self.reward)
        return fields
