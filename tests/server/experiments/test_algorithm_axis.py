"""An experiment with an algorithm axis: each cell runs its algorithm with that algorithm's own options (its
defaults, never another algorithm's), and the summary gives each group's time to reward R over its seeds."""

from __future__ import annotations

from typing import Any

from server_harness import Harness
from sqlalchemy import select

from server.models import Job
from server.schemas.compare import CompareRow
from server.services import statistics
from server.services.experiment_matrix import Axis, cell_spec, expand
from server.services.experiment_summary import CellFigures, summarize
from trainer.spec import JobSpec

# Flow-GRPO's own options set in the base spec: the SDE level, the clip range, its trained steps.
BASE = {
    "name": "methods",
    "algorithm": {"name": "flow_grpo", "total_steps": 2, "group_size": 4, "noise_level": 0.9, "clip_range": 0.2,
                  "train_timesteps": 3, "learning_rate": 0.001},
}  # fmt: skip


def test_a_cell_of_another_algorithm_keeps_the_shared_fields_and_takes_its_own_defaults() -> None:
    cells = expand([Axis("algorithm.name", ["flow_grpo", "dance_grpo", "awm"])])
    specs = {cell.values["algorithm.name"]: cell_spec(BASE, cell, "methods") for cell in cells}
    assert specs["flow_grpo"]["algorithm"] == BASE["algorithm"]
    for name in ("dance_grpo", "awm"):
        assert specs[name]["algorithm"] == {"name": name, "total_steps": 2, "group_size": 4, "learning_rate": 0.001}
    dance = JobSpec.model_validate(specs["dance_grpo"]).algorithm
    assert (dance.noise_level, dance.clip_range) == (0.3, 1e-4)  # DanceGRPO's upstream values, not the base's


def test_an_option_axis_after_the_algorithm_axis_is_applied_to_the_new_algorithm() -> None:
    (cell,) = expand([Axis("algorithm.clip_range", [0.01]), Axis("algorithm.name", ["dance_grpo"])])
    assert cell_spec(BASE, cell, "methods")["algorithm"]["clip_range"] == 0.01


def test_an_experiment_over_algorithms_queues_each_cell_with_its_algorithm_s_own_options(harness: Harness) -> None:
    body = {
        "name": "methods",
        "spec": BASE,
        "axes": [{"path": "algorithm.name", "values": ["flow_grpo", "dance_grpo", "diffusion_nft"]}],
    }
    response = harness.client.post("/api/v1/experiments", json=body, headers=harness.admin)
    assert response.status_code == 201, response.text
    with harness.session() as session:
        jobs = {job.algorithm: job.spec["algorithm"] for job in session.scalars(select(Job))}
    assert set(jobs) == {"flow_grpo", "dance_grpo", "diffusion_nft"}
    assert (jobs["flow_grpo"]["noise_level"], jobs["flow_grpo"]["clip_range"]) == (0.9, 0.2)
    for name in ("dance_grpo", "diffusion_nft"):  # as if the base had named this algorithm and no option of its own
        shared = {"name": name, "total_steps": 2, "group_size": 4, "learning_rate": 0.001}
        own = JobSpec.model_validate({"name": "methods", "algorithm": shared}).algorithm
        for option in ("noise_level", "clip_range", "train_timesteps"):
            assert jobs[name][option] == getattr(own, option), (name, option)


def _row(job_id: int, algorithm: str, seconds: float | None) -> CompareRow:
    data: dict[str, Any] = {
        "id": job_id, "name": f"job{job_id}", "status": "succeeded", "executor": "native", "algorithm": algorithm,
        "steps": 30, "samples_per_s": 1.0, "speedup": None, "bound": None, "of_bound": None,
        "peak_memory_bytes": None, "final_reward": 0.6, "best_reward": 0.6, "eval_reward": None, "eval_step": None,
        "started_at": None, "ended_at": None, "duration_s": 100.0, "time_to_reward_s": seconds, "shared_with": [],
    }  # fmt: skip
    return CompareRow.model_validate(data)


def test_the_summary_gives_each_algorithm_s_time_to_reward_with_its_interval_over_the_seeds_that_reached_it() -> None:
    seconds = {"flow_grpo": [100.0, 110.0, 90.0], "awm": [30.0, 40.0, None]}
    cells = [
        CellFigures({"algorithm.name": name, "seed": seed}, seed, _row(10 * i + seed, name, value))
        for i, (name, values) in enumerate(seconds.items())
        for seed, value in enumerate(values, start=1)
    ]
    groups = {g.label: g for g in summarize(cells, {}, 0.6, "the final train reward of #1").groups}
    flow, awm = groups["algorithm.name=flow_grpo"], groups["algorithm.name=awm"]
    expected = statistics.log_interval([100.0, 110.0, 90.0])
    assert (flow.time_to_reward_s.mean, flow.time_to_reward_s.low, flow.time_to_reward_s.high) == (
        expected.mean,
        expected.low,
        expected.high,
    )
    assert flow.reached_reward == "3 of 3 seeds reached R"
    assert (awm.time_to_reward_s.n, awm.reached_reward) == (2, "2 of 3 seeds reached R")


def test_without_a_target_the_summary_says_why_instead_of_a_count() -> None:
    cells = [CellFigures({"algorithm.name": "awm", "seed": 1}, 1, _row(1, "awm", None))]
    (group,) = summarize(cells, {}, None, "no target: the set has no native Flow-GRPO job with a reward").groups
    assert group.time_to_reward_s.mean is None
    assert group.reached_reward == "no target: the set has no native Flow-GRPO job with a reward"
