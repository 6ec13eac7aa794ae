"""An experiment's curves: one metric per cell group, the mean over its seeds with a band from the lowest to the
highest seed at each step (the experiment page draws them; the report's plot is the same curves)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class GroupCurve(BaseModel):
    label: str = Field(description="the cell group as the summary names it")
    executor: str
    job_ids: list[int]
    steps: list[int] = Field(description="every step some seed of the group reported (downsampled per job)")
    mean: list[float] = Field(description="the mean over the seeds that have a value at the step")
    low: list[float] = Field(description="the lowest seed's value at the step")
    high: list[float] = Field(description="the highest seed's value at the step")
    seeds: list[int] = Field(description="how many seeds have a value at the step")


class ExperimentCurves(BaseModel):
    key: str
    groups: list[GroupCurve]
    definition: str
