"""Checkpoints and final models a job registered (registering one: trainer.spec.ingest.ArtifactRecord)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field

from server.schemas.common import ReadModel, UtcDatetime

MAX_RETENTION = 10_000


class ArtifactOut(ReadModel):
    id: int
    attempt: int
    kind: str
    name: str
    step: int | None
    path: str
    size_bytes: int | None
    created_at: UtcDatetime
    sha256: str | None = Field(description="set once the platform holds the bytes (uploaded and checked)")
    packing: str | None = Field(description="file, or tar for a folder (downloaded as one tar stream)")
    pruned_at: UtcDatetime | None = Field(description="when retention deleted its bytes from the store")

    @computed_field(description="the platform holds its bytes: GET .../download serves them")  # type: ignore[prop-decorator]
    @property
    def downloadable(self) -> bool:
        return self.sha256 is not None and self.pruned_at is None


class ArtifactList(BaseModel):
    items: list[ArtifactOut]


class ArtifactStorage(BaseModel):
    """A team's bytes in the artifact store, per artifact kind, and its checkpoint retention."""

    team_id: int
    bytes_by_kind: dict[str, int] = Field(description="bytes held per kind (checkpoint, model, export, playground)")
    total_bytes: int
    checkpoint_retention: int | None = Field(description="checkpoints kept per job, the latest; null: all")


class RetentionChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checkpoint_retention: int | None = Field(
        ge=1, le=MAX_RETENTION, description="keep the last N checkpoints of each job; null keeps them all"
    )
