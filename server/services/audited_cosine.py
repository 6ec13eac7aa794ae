"""The audited cosine beside a class-A executor's speedup, defined once: the job page, the compare answer (its page,
API and CLI) and the experiment summary render this answer.

A class-A executor (``approximate`` in trainer.spec's executor options: JAGG and the executors built on it) trains
with another gradient estimator than native's, so its speed is shown with what it costs in fidelity: the cosine of
its gradient with native's on the job's spec. The first source found is the figure:

1. the job's own first-step audit (``executor.audit_first_step``): step 1's ``audit/cosine``, ``audit/rel_l2`` and
   ``audit/failed``, the figures ``python -m trainer audit`` gives for the spec;
2. the advisor's probe of the advice the job was submitted from (the same spec, the probe's audit at its reduced K
   and batch, which the text says);
3. neither: "not audited", never a made-up figure.

A failed audit (``audit/failed`` 1, or a non-finite figure: the metric store keeps finite values only) reads "audit
failed", never as a cosine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Advice
from server.schemas.audited_cosine import AuditedCosine
from server.services.metric_reads import Point
from trainer.spec.executor import OPTION_MODELS

COSINE, REL_L2, FAILED = "audit/cosine", "audit/rel_l2", "audit/failed"
FIRST_STEP = "first-step audit"
NOT_AUDITED = "not audited"
DEFINITION = (
    "for a class-A executor (another gradient estimator than native's), the cosine of its gradient with native's on "
    "the job's spec: from the job's own first-step audit (executor.audit_first_step), else from the advisor's probe "
    "of the advice it was submitted from (at the probe's reduced K and batch); 'audit failed' when that audit failed "
    "(a NaN is a fail), 'not audited' without either; null for exact executors"
)


def is_approximate(executor: str) -> bool:
    model = OPTION_MODELS.get(executor)
    return model is not None and model.approximate


class AuditTarget(NamedTuple):
    """What the figure needs of a job."""

    job_id: int
    executor: str
    advice_id: int | None


def audit_pairs(jobs: Sequence[AuditTarget]) -> list[tuple[int, str]]:
    """The (job, metric) pairs the figure reads: the caller reads them with its other latest points, in one
    statement (services.metric_reads.latest_points_of_pairs)."""
    return [(job.job_id, key) for job in jobs if is_approximate(job.executor) for key in (COSINE, REL_L2, FAILED)]


def audited_cosines(
    session: Session, jobs: Sequence[AuditTarget], points: Mapping[tuple[int, str], Point]
) -> dict[int, AuditedCosine | None]:
    """Each job's audited cosine (None: an exact executor, nothing to show), for all the jobs at once: ``points``
    holds the latest points of ``audit_pairs(jobs)``; one statement reads the probes when a job came from an
    advice."""
    approximate = [job for job in jobs if is_approximate(job.executor)]
    advice_ids = {job.advice_id for job in approximate if job.advice_id is not None}
    probes = (
        dict(session.execute(select(Advice.id, Advice.probe).where(Advice.id.in_(advice_ids))).all())
        if advice_ids
        else {}
    )
    found: dict[int, AuditedCosine | None] = {job.job_id: None for job in jobs}
    for job in approximate:
        figures = {
            key: points[(job.job_id, key)].value for key in (COSINE, REL_L2, FAILED) if (job.job_id, key) in points
        }
        if FAILED in figures:
            found[job.job_id] = figure(
                "first_step_audit", figures.get(COSINE), figures.get(REL_L2), figures[FAILED] != 0
            )
            continue
        probed = probe_of(probes.get(job.advice_id), job.executor) if job.advice_id is not None else None
        if probed is not None:
            found[job.job_id] = figure("advisor_probe", *probed, advice_id=job.advice_id)
            continue
        found[job.job_id] = AuditedCosine(
            source="not_audited", cosine=None, rel_l2=None, failed=False, text=NOT_AUDITED
        )
    return found


def probe_of(report: Any, executor: str) -> tuple[float | None, float | None, bool] | None:
    """The probe's cosine and relative L2 of ``executor`` and whether they failed (not finite); None when the probe
    has no cosine for it."""
    rows = report.get("executors", []) if isinstance(report, dict) else []
    row = next((r for r in rows if isinstance(r, dict) and r.get("name") == executor), None)
    if row is None or row.get("gradient_cosine") is None:
        return None
    cosine, rel_l2 = float(row["gradient_cosine"]), row.get("gradient_rel_l2")
    rel = float(rel_l2) if rel_l2 is not None else None
    return cosine, rel, not math.isfinite(cosine) or (rel is not None and not math.isfinite(rel))


def figure(
    source: str, cosine: float | None, rel_l2: float | None, failed: bool, advice_id: int | None = None
) -> AuditedCosine:
    """One audit's figures and the words every face prints; a failed or non-finite audit shows no cosine."""
    where = FIRST_STEP if source == "first_step_audit" else f"advisor's probe, advice #{advice_id}, reduced K and batch"
    finite = cosine is not None and math.isfinite(cosine)
    failed = failed or not finite
    text = f"audit failed ({where})" if failed else f"cosine {cosine:.4f} ({where})"
    return AuditedCosine(
        source=source,  # type: ignore[arg-type]
        cosine=None if failed else cosine,
        rel_l2=rel_l2 if rel_l2 is not None and math.isfinite(rel_l2) else None,
        failed=failed,
        advice_id=advice_id,
        text=text,
    )


def group_words(figures: Sequence[AuditedCosine | None]) -> str | None:
    """The audited cosine of a group of seeds of one spec (an experiment's cell group), from its jobs' figures: the
    lowest and highest cosine of the audited seeds, and the seeds whose audit failed or that have none; None for an
    exact executor."""
    found = [f for f in figures if f is not None]
    if not found:
        return None
    if len(found) == 1:
        return found[0].text
    cosines = sorted(f.cosine for f in found if f.cosine is not None)
    failed = sum(f.failed for f in found)
    missing = sum(f.source == "not_audited" for f in found)
    sources = {
        FIRST_STEP if f.source == "first_step_audit" else "advisor's probe" for f in found if f.cosine is not None
    }
    parts = []
    if cosines:
        spread = f"{cosines[0]:.4f}" if cosines[0] == cosines[-1] else f"{cosines[0]:.4f} to {cosines[-1]:.4f}"
        where = sources.pop() if len(sources) == 1 else "first-step audits and advisor's probes"
        parts.append(f"cosine {spread} ({where}, {len(cosines)} of {len(found)} seeds)")
    if failed:
        parts.append(f"audit failed on {failed} of {len(found)} seeds")
    if missing:
        parts.append(f"{missing} of {len(found)} seeds not audited" if parts else NOT_AUDITED)
    return ", ".join(parts)
