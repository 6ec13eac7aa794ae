"""An evaluation job: a prompt set x rewards on the source checkpoint (or the base model), sampled as the trainer's
in-training evaluation samples (`trainer.run.evaluate`: the ODE sampler on the algorithm's σ grid with the job's
guidance, x_0 from each seed's eval stream, each prompt encoded alone), so the numbers are reproducible: the same
task on the same checkpoint gives the same scores. The model is held in fp32 on the job's device, as the playground
holds it (`trainer.export.trained_model`). The scores go to the platform (POST .../evaluation), which computes the
figures.

Under the geneval reward each prompt needs its GenEval metadata row (trainer/prompt_metadata.py): a team dataset's
are fetched with the job token by the task's pinned reference (trainer/dataset_fetch.py), as a training job fetches
its prompt set; a prompt still without one is a spec error naming `prompts`, never a silent 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from trainer.algorithms.registry import make_algorithm
from trainer.dataset_fetch import local_split
from trainer.export.trained_model import base_family, trained_family
from trainer.job import quiet_libraries
from trainer.models.base import Conditioning, ModelFamily
from trainer.prompt_metadata import geneval_prompts, metadata_of
from trainer.prompts import load_prompts
from trainer.reporting.reporter import Reporter
from trainer.rewards.registry import WeightedReward
from trainer.rollout import sample_ode
from trainer.sampling.denoising_step import DenoisingStep
from trainer.sampling.step_grid import StepGrid
from trainer.spec import JobSpec, SpecError
from trainer.spec.dataset_format import format_of_file
from trainer.spec.dataset_source import is_dataset_source
from trainer.spec.eval_task import EvalTask, EvaluationReport, RewardScores
from trainer.spec.geneval_options import GENEVAL
from trainer.tasks.source_checkpoint import checkpoint_folder

REPORT_NAME = "evaluation.json"


def evaluated_family(spec: JobSpec, task: EvalTask, output_dir: Path, device: torch.device) -> ModelFamily:
    """The source checkpoint's model, or without a source the spec's model as it is, in fp32 on `device`."""
    if task.source is not None:
        return trained_family(spec, checkpoint_folder(task.source, output_dir), device)
    family = base_family(spec, device)
    family.transformer.eval()
    return family


def denoising_step(spec: JobSpec, family: ModelFamily, device: torch.device) -> DenoisingStep:
    """The job's own eval sampler: its algorithm's σ grid and its guidance (trainer.job.TrainingJob)."""
    algo = spec.algorithm
    algorithm = make_algorithm(algo, family.sigmas(algo.sampling_steps, algo.shift), spec.seed)
    grid = StepGrid.build(algorithm.sigmas, algorithm.sde_kind, algorithm.level, device)
    return DenoisingStep(family, grid, algo.cfg_scale)


def load_geneval_rows(spec: JobSpec, task: EvalTask, prompts: list[str], output_dir: Path) -> None:
    """Under the geneval reward: a GenEval dataset's rows, fetched into the job's folder, kept for the reward; a
    SpecError naming `prompts` when a prompt still has no row."""
    if not any(reward.name == GENEVAL for reward in spec.reward):
        return
    if is_dataset_source(task.prompt_set):
        local = local_split(task.prompt_set, output_dir)
        if format_of_file(local.name) == "geneval":
            geneval_prompts(local, "prompts")
    missing = [prompt for prompt in prompts if metadata_of(prompt) is None]
    if missing:
        message = f"{len(missing)} of {len(prompts)} prompts have no GenEval metadata row (first: {missing[0]!r})"
        raise SpecError("prompts", f"{message}; the {GENEVAL} reward checks each prompt against its row")


def score(
    spec: JobSpec, task: EvalTask, family: ModelFamily, prompts: list[str], device: torch.device
) -> dict[str, list[float]]:
    """Each reward's score of every sample: prompt by prompt, each prompt's seeds 0..seeds_per_prompt-1 in order."""
    denoiser = denoising_step(spec, family, device)
    reward = WeightedReward(spec.reward, device)
    rows = [(prompt, seed) for prompt in prompts for seed in range(task.seeds_per_prompt)]
    encoded: dict[str, Conditioning] = {}
    scores: dict[str, list[float]] = {name: [] for name in reward.names}
    with torch.no_grad():
        for start in range(0, len(rows), task.batch_size):
            batch = rows[start : start + task.batch_size]
            texts = [prompt for prompt, _ in batch]
            for text in texts + ([""] if spec.algorithm.cfg_scale > 1 else []):
                if text not in encoded:
                    encoded[text] = family.encode_prompts([text]).to(device)
            cond = Conditioning.cat([encoded[text] for text in texts])
            uncond = encoded[""].repeat_to(len(batch)) if spec.algorithm.cfg_scale > 1 else None
            images = sample_ode(denoiser, family.transformer, cond, uncond, [seed for _, seed in batch])
            _, raw = reward(images, texts)
            for name in reward.names:
                scores[name].extend(float(value) for value in raw[name])
    return scores


def run(spec: JobSpec, task: EvalTask, output_dir: Path, reporter: Reporter | None) -> None:
    quiet_libraries()
    torch.manual_seed(spec.seed)
    prompts = task.prompts or load_prompts(task.prompt_set)
    load_geneval_rows(spec, task, prompts, output_dir)
    device = torch.device("cuda" if spec.resources.device_type == "cuda" else "cpu")
    family = evaluated_family(spec, task, output_dir, device)
    scores = score(spec, task, family, prompts, device)
    report = EvaluationReport(
        attempt=reporter.attempt if reporter is not None else 1,
        prompts=prompts,
        seeds_per_prompt=task.seeds_per_prompt,
        rewards=[RewardScores(name=name, scores=values) for name, values in scores.items()],
    )
    (output_dir / REPORT_NAME).write_text(json.dumps(report.model_dump(mode="json")))
    for name, values in scores.items():
        print(f"eval {task.prompt_set} {name}: mean {sum(values) / len(values):.4f} over {len(values)} samples")
    if reporter is not None:
        reporter.evaluation(report)
