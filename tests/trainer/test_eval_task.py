"""The evaluation task (`python -m trainer task` with an eval task) on the tiny model: it scores each prompt x seed
with every reward of the spec, reproducibly, and its scores of a checkpoint are the trainer's own in-training eval
scores of that checkpoint for the same prompts and seeds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.trainer.conftest import write_spec
from tests.trainer.test_exports import PROMPTS, spec_data, trained_checkpoint
from trainer.spec import parse_spec

REWARDS = [{"name": "brightness"}, {"name": "prompt_color_match"}]
SEEDS = 2


def run_eval(root: Path, spec: dict[str, Any], job_id: int, source: dict[str, Any] | None) -> dict[str, Any]:
    """The eval task job `job_id` beside the source job's folder, as a worker lays them out; its report."""
    from trainer.__main__ import main
    from trainer.tasks.eval_task import REPORT_NAME

    task = {"kind": "eval", "source": source, "prompt_set": "eval.txt", "prompts": PROMPTS, "seeds_per_prompt": SEEDS}
    (root / f"task-{job_id}.json").write_text(json.dumps(task))
    argv = ["task", "--spec", str(write_spec(root / "spec.json", spec)), "--task", str(root / f"task-{job_id}.json")]
    assert main([*argv, "--output-dir", str(root / str(job_id))]) == 0
    return json.loads((root / str(job_id) / REPORT_NAME).read_text())


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> dict[str, Any]:
    """A source job (#5) with a checkpoint, the trainer's eval scores of it, and eval jobs on it (#6, #7) and on
    the base model (#8)."""
    from trainer.job import TrainingJob
    from trainer.rollout import sample_ode

    root = tmp_path_factory.mktemp("eval") / "jobs"
    spec = spec_data("sd3") | {"reward": REWARDS}
    job = TrainingJob.build(parse_spec(spec), "sharded")
    checkpoint = trained_checkpoint(job.family, root / "5")
    prompts = [p for p in PROMPTS for _ in range(SEEDS)]
    seeds = [s for _ in PROMPTS for s in range(SEEDS)]
    images = sample_ode(job.denoiser, job.policy, job.conditioning(prompts), job.unconditional(prompts), seeds)
    _, own = job.reward(images, prompts)
    source = {"job_id": 5, "artifact_id": 1, "step": 3, "path": checkpoint.relative_to(root / "5").as_posix()}
    return {
        "own": {name: values.tolist() for name, values in own.items()},
        "first": run_eval(root, spec, 6, source),
        "again": run_eval(root, spec, 7, source),
        "base": run_eval(root, spec, 8, None),
    }


def scores(report: dict[str, Any]) -> dict[str, list[float]]:
    return {reward["name"]: reward["scores"] for reward in report["rewards"]}


def test_each_reward_scores_every_prompt_and_seed(evaluated: dict[str, Any]) -> None:
    report = evaluated["first"]
    assert (report["prompts"], report["seeds_per_prompt"]) == (PROMPTS, SEEDS)
    assert {name: len(values) for name, values in scores(report).items()} == {
        "brightness": len(PROMPTS) * SEEDS,
        "prompt_color_match": len(PROMPTS) * SEEDS,
    }


def test_the_same_task_on_the_same_checkpoint_gives_the_same_scores(evaluated: dict[str, Any]) -> None:
    assert scores(evaluated["first"]) == scores(evaluated["again"])


def test_the_scores_of_a_checkpoint_are_the_trainers_own_eval_scores_of_it(evaluated: dict[str, Any]) -> None:
    ours = scores(evaluated["first"])
    for name, values in evaluated["own"].items():
        assert ours[name] == pytest.approx(values, abs=1e-5), name


def test_the_base_model_is_evaluated_without_the_checkpoints_weights(evaluated: dict[str, Any]) -> None:
    """The tiny model's images move little with the random adapter (about 5e-4 in brightness), far more than the
    nothing that separates two runs of one task."""
    base, trained = scores(evaluated["base"])["brightness"], scores(evaluated["first"])["brightness"]
    assert max(abs(a - b) for a, b in zip(base, trained, strict=True)) > 1e-4
