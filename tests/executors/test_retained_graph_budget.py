"""lean_retain's default ``max_retained_graphs`` under ``resources.memory_budget`` (issue 27 item 4): the most graphs
whose retained bytes fit what the budget leaves beside the rest of the step, measured on the first measured step;
over it the job fails naming the budget, or the memory guard's schedule runs from the next step on. Without a
budget there is no limit, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from trainer.executors.lean_retain import LeanRetainExecutor
from trainer.executors.retained_graph_budget import RetainedGraphBudget
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import SpecError, parse_spec, retained_graph_bound
from trainer.step_memory import StepMemory, measure_step

MiB = 2**20


def test_the_graphs_that_fit_are_the_room_beside_the_rest_of_the_step_over_the_bytes_per_graph() -> None:
    """A step of 100 MiB peak whose 8 kept graphs held 40 MiB: 60 MiB is held otherwise, 5 MiB a graph."""
    measured = StepMemory(start=30 * MiB, rise=70 * MiB, retained_graphs=40 * MiB)
    assert RetainedGraphBudget.measured(100 * MiB, measured, 8).graphs_that_fit() == 8
    assert RetainedGraphBudget.measured(84 * MiB, measured, 8).graphs_that_fit() == 4
    assert RetainedGraphBudget.measured(64 * MiB, measured, 8).graphs_that_fit() == 0


def test_a_budget_of_exactly_the_measured_peak_fits_every_graph_the_step_kept() -> None:
    """1001 bytes over 12 graphs: a float division floors the room to 11 graphs."""
    measured = StepMemory(start=3000, rise=1001, retained_graphs=1001)
    assert RetainedGraphBudget.measured(measured.peak, measured, 12).graphs_that_fit() == 12


def test_a_budget_below_what_the_step_holds_otherwise_fits_no_graph() -> None:
    measured = StepMemory(start=30 * MiB, rise=70 * MiB, retained_graphs=40 * MiB)
    assert RetainedGraphBudget.measured(50 * MiB, measured, 8).graphs_that_fit() == 0


def two_steps(budget: int | None, guard: str = "fail") -> tuple[dict[str, float], dict[str, float]]:
    """Two lean_retain steps of the tiny model, the first measured; the second step's executor reads it."""
    resources: dict[str, Any] = {} if budget is None else {"memory_budget": budget}
    spec = parse_spec(audit_spec(executor={"name": "lean_retain", "on_memory_guard": guard}, resources=resources))
    job = TrainingJob.build(spec, "shared")
    executor = LeanRetainExecutor(job, spec.executor)  # type: ignore[arg-type]
    algo = spec.algorithm
    batches = [
        step_batch(job.prompts, s, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, "shared") for s in (1, 2)
    ]
    first, _ = measure_step(job, lambda: executor.train_step(batches[0]))
    return first.metrics, executor.train_step(batches[1]).metrics


def test_without_a_budget_lean_retain_keeps_every_graph(sfumato_home: Path, tiny_model_dir: Path) -> None:
    _, second = two_steps(None)
    assert "executor/memory_guard_fallback" not in second and second["executor/retained_graphs"] == 12


def test_a_budget_the_graphs_fit_keeps_every_graph(sfumato_home: Path, tiny_model_dir: Path) -> None:
    _, second = two_steps(2**40)
    assert "executor/memory_guard_fallback" not in second and second["executor/retained_graphs"] == 12


def test_a_budget_the_graphs_overflow_runs_the_guard_s_schedule_from_the_next_step(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    first, second = two_steps(1, guard="native")
    assert "executor/memory_guard_fallback" not in first and second["executor/memory_guard_fallback"] == 1.0


def test_a_budget_the_graphs_overflow_fails_naming_the_budget_when_the_guard_fails(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    with pytest.raises(SpecError) as refused:
        two_steps(1)
    assert refused.value.field == "resources.memory_budget" and "room for 0" in refused.value.message


@pytest.fixture
def budgeted(sfumato_home: Path, tiny_model_dir: Path) -> LeanRetainExecutor:
    """A lean_retain executor under a 4000-byte budget, guard 'fail', before its first measured step."""
    spec = parse_spec(audit_spec(executor={"name": "lean_retain"}, resources={"memory_budget": 4000}))
    return LeanRetainExecutor(TrainingJob.build(spec, "shared"), spec.executor)  # type: ignore[arg-type]


def measured_once(executor: LeanRetainExecutor, memory: StepMemory) -> None:
    """What a measured step leaves: the job's last step memory and the graphs the executor kept (its bound)."""
    executor.job.memory.last, executor.kept = memory, retained_graph_bound(executor.job.spec)
    executor.apply_budget()


def test_a_step_whose_peak_is_exactly_the_budget_keeps_its_graphs(budgeted: LeanRetainExecutor) -> None:
    measured_once(budgeted, StepMemory(start=2999, rise=1001, retained_graphs=1001))
    assert budgeted.fallback is None


def test_the_budget_is_judged_on_the_first_measured_step_only(budgeted: LeanRetainExecutor) -> None:
    """A later step measured over the budget (CUDA measures every step) changes nothing: the limit is set once."""
    measured_once(budgeted, StepMemory(start=3000, rise=1000, retained_graphs=1000))
    measured_once(budgeted, StepMemory(start=3000, rise=5000, retained_graphs=1000))
    assert budgeted.fallback is None
