"""The experiment summary shows each class-A group's audited cosine beside its speedup (services.audited_cosine):
the lowest and highest of its seeds' first-step audits, the seeds that failed or were not audited; none for an
exact executor."""

from __future__ import annotations

from server.schemas.audited_cosine import AuditedCosine
from server.schemas.compare import CompareRow
from server.services.audited_cosine import figure, group_words
from server.services.experiment_summary import CellFigures, summarize

NATIVE = {1: 10.0, 2: 11.0, 3: 12.0}
JAGG = {1: 12.0, 2: 14.3, 3: 16.8}
NOT_AUDITED = AuditedCosine(source="not_audited", cosine=None, rel_l2=None, failed=False, text="not audited")


def _row(job_id: int, executor: str, samples_per_s: float, audited: AuditedCosine | None = None) -> CompareRow:
    return CompareRow(
        id=job_id, name=f"job{job_id}", status="succeeded", executor=executor, algorithm="flow_grpo", steps=6,
        samples_per_s=samples_per_s, speedup=None, bound=None, of_bound=None, audited_cosine=audited,
        peak_memory_bytes=2.0**30, final_reward=1.0, best_reward=1.0, eval_reward=1.0, eval_step=6, started_at=None,
        ended_at=None, duration_s=None, shared_with=[],
    )  # fmt: skip


def test_a_class_a_group_shows_its_seeds_audited_cosines_beside_its_speedup() -> None:
    audits = {1: figure("first_step_audit", 0.9912, 0.13, False), 2: figure("first_step_audit", 0.9951, 0.1, False)}
    audits[3] = NOT_AUDITED
    cells = [CellFigures({"executor.name": "native", "seed": s}, s, _row(s, "native", NATIVE[s])) for s in NATIVE]
    cells += [
        CellFigures({"executor.name": "jagg", "seed": s}, s, _row(10 + s, "jagg", JAGG[s], audits[s])) for s in JAGG
    ]
    summary = summarize(cells, {})
    words = "cosine 0.9912 to 0.9951 (first-step audit, 2 of 3 seeds), 1 of 3 seeds not audited"
    assert [g.audited_cosine for g in summary.groups] == [None, words]
    (verdict,) = summary.verdicts
    assert verdict.audited_cosine == words
    assert verdict.text.startswith(f"jagg: 1.30\u00d7 [1.07, 1.57] faster than native, gradient {words}, eval reward")


def test_a_failed_audit_is_counted_never_shown_as_a_cosine() -> None:
    failed = figure("first_step_audit", float("nan"), None, True)
    assert (failed.cosine, failed.text) == (None, "audit failed (first-step audit)")
    assert group_words([failed, figure("first_step_audit", 0.99, 0.1, False)]) == (
        "cosine 0.9900 (first-step audit, 1 of 2 seeds), audit failed on 1 of 2 seeds"
    )
    assert group_words([NOT_AUDITED, NOT_AUDITED]) == "not audited"
    assert group_words([None, None]) is None
