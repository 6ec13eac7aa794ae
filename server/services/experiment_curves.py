"""Curves of an experiment's cell groups: for one metric, each group's mean over its seeds at every step, with
the lowest and highest seed as a band. The one definition the experiment page's charts (through
GET /api/v1/experiments/{id}/curves) and the exported report's plot draw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from server.schemas.experiment_curves import ExperimentCurves, GroupCurve
from server.services.auth import Caller
from server.services.experiment_matrix import SEED_PATH, group_key
from server.services.experiment_reads import cell_jobs, cells_of, visible_experiment
from server.services.experiment_summary import group_label
from server.services.metric_reads import metric_series

DEFINITION = (
    "per cell group and step: the mean of the seeds' values (each seed's series downsampled to at most "
    "max_points steps, the bucket's last value), and the lowest and highest of them"
)


@dataclass(frozen=True)
class CurveGroup:
    """The cells that differ only in seed, as the summary labels them."""

    label: str
    executor: str
    job_ids: list[int]


def group_curves(session: Session, groups: Sequence[CurveGroup], key: str, max_points: int) -> list[GroupCurve]:
    """Each group's curve of `key`; groups with no point of it are left out."""
    curves: list[GroupCurve] = []
    for group in groups:
        by_step: dict[int, list[float]] = {}
        for job_id in group.job_ids:
            series = metric_series(session, job_id, [key], max_points).series[0]
            for step, value in zip(series.steps, series.values, strict=True):
                if value is not None:
                    by_step.setdefault(step, []).append(value)
        steps = sorted(by_step)
        if not steps:
            continue
        values = [by_step[s] for s in steps]
        curves.append(
            GroupCurve(
                label=group.label,
                executor=group.executor,
                job_ids=group.job_ids,
                steps=steps,
                mean=[sum(v) / len(v) for v in values],
                low=[min(v) for v in values],
                high=[max(v) for v in values],
                seeds=[len(v) for v in values],
            )
        )
    return curves


def experiment_curves(
    session: Session, caller: Caller, experiment_id: int, key: str, max_points: int
) -> ExperimentCurves:
    """The visible experiment's cell groups (in matrix order) and their curves of `key`."""
    experiment = visible_experiment(session, caller, experiment_id)
    jobs = cell_jobs(session, experiment.id)
    executors = {job.id: job.executor for job in jobs}
    groups: dict[tuple[tuple[str, str], ...], CurveGroup] = {}
    for cell in cells_of(experiment, jobs):
        values = {p: v for p, v in cell.values.items() if p != SEED_PATH}
        group = groups.setdefault(group_key(cell.values), CurveGroup(group_label(values), executors[cell.job_id], []))
        group.job_ids.append(cell.job_id)
    return ExperimentCurves(
        key=key, groups=group_curves(session, list(groups.values()), key, max_points), definition=DEFINITION
    )
