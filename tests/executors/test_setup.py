"""One training set-up (TrainingJob.build) for the run, the audit and the bench; several executors on
one job each get their own options object, and the job's spec is never rewritten."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.executors.conftest import REPO, audit_spec
from trainer.audit import AuditSession, options_for
from trainer.spec import LeanRetainOptions, LeanReweightOptions, NativeOptions, SpecError, parse_spec

SET_UP_PARTS = {"init_distributed", "load_family", "make_algorithm", "WeightedReward", "load_prompts", "TrainingJob"}


def calls_in(module: str) -> set[str]:
    """The names of what ``trainer/<module>.py`` calls (``f(...)`` and ``x.f(...)``)."""
    tree = ast.parse((REPO / "trainer" / f"{module}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                base = func.value.id if isinstance(func.value, ast.Name) else ""
                names.add(f"{base}.{func.attr}" if base else func.attr)
            elif isinstance(func, ast.Name):
                names.add(func.id)
    return names


@pytest.mark.parametrize("module", ["run", "audit", "bench"])
def test_run_audit_and_bench_set_up_through_training_job_build_only(module: str) -> None:
    calls = calls_in(module)
    assert "TrainingJob.build" in calls
    assert not calls & SET_UP_PARTS, f"trainer/{module}.py sets up {calls & SET_UP_PARTS} itself"


def rewrites_a_spec(target: ast.expr) -> bool:
    """``job.spec = ...`` (an object's own ``self.spec = ...`` in its constructor is its set-up)."""
    owner = target.value if isinstance(target, ast.Attribute) else None
    return (
        isinstance(target, ast.Attribute)
        and target.attr == "spec"
        and not (isinstance(owner, ast.Name) and owner.id == "self")
    )


def test_no_trainer_module_rewrites_a_job_s_spec() -> None:
    for path in (REPO / "trainer").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            assert not any(rewrites_a_spec(target) for target in targets), path


def test_swapping_executors_builds_new_options_and_leaves_the_spec_unchanged(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = parse_spec(audit_spec(executor={"name": "lean_retain", "max_retained_graphs": 1000}))
    before = spec.model_dump()
    session = AuditSession(spec, ["native", "lean_retain", "lean_reweight"])
    for name in ("lean_reweight", "native", "lean_retain"):
        session.capture(name)
    assert session.job.spec is spec and spec.model_dump() == before
    assert isinstance(session.options["native"], NativeOptions)
    assert session.options["lean_retain"] is spec.executor  # the spec's own executor keeps its options
    assert isinstance(session.options["lean_reweight"], LeanReweightOptions)
    assert isinstance(spec.executor, LeanRetainOptions)


def test_an_executor_that_cannot_run_the_spec_is_refused_naming_the_field() -> None:
    spec = parse_spec(audit_spec(algorithm={"kl_beta": 0.04}))
    with pytest.raises(SpecError) as caught:
        options_for(spec, "lean_reweight")
    assert caught.value.field == "algorithm.kl_beta"


def test_a_job_s_variant_spec_holds_inside_its_block_only_even_when_the_block_raises(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = parse_spec(audit_spec())
    session = AuditSession(spec, ["native"])
    variant = spec.model_copy(update={"algorithm": spec.algorithm.model_copy(update={"rollout_chunks": 2})})
    with pytest.raises(RuntimeError), session.job.variant(variant):
        assert session.job.spec is variant
        raise RuntimeError("a step that fails")
    assert session.job.spec is spec
