"""Rewards of rollout chunks are scored on a background thread, with the rewards of scoring them inline."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.spec import RewardSpec, parse_spec

PROMPTS = ["a red apple", "a blue car", "a green tree", "a photo of the sky"] * 2


def scored_in_chunks(background: bool, images: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    from trainer.rewards.background import BackgroundScorer
    from trainer.rewards.registry import WeightedReward

    specs = [RewardSpec(name="prompt_color_match"), RewardSpec(name="jpeg_compressibility", weight=0.5)]
    scorer = BackgroundScorer(WeightedReward(specs, torch.device("cpu")), background=background)
    for rows in (slice(0, 3), slice(3, 6), slice(6, 8)):
        scorer.submit(images[rows], PROMPTS[rows])
    return scorer.collect()


def test_background_scores_equal_inline_scores_chunk_for_chunk() -> None:
    images = torch.rand(8, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    total, parts = scored_in_chunks(True, images)
    inline_total, inline_parts = scored_in_chunks(False, images)
    assert torch.equal(total, inline_total) and total.shape == (8,)
    assert parts.keys() == inline_parts.keys() and all(torch.equal(parts[k], inline_parts[k]) for k in parts)


def test_a_chunked_rollouts_scores_are_its_images_scored_inline(sfumato_home: Path) -> None:
    from trainer.algorithms.registry import make_algorithm
    from trainer.distributed import Distributed
    from trainer.job import TrainingJob
    from trainer.layout import step_batch
    from trainer.models.loading import load_family
    from trainer.prompts import load_prompts
    from trainer.rewards.registry import WeightedReward

    spec = parse_spec(tiny_spec(algorithm={"sampling_steps": 3, "rollout_chunks": 3}))
    cpu = torch.device("cpu")
    family = load_family(spec.model, cpu)
    algorithm = make_algorithm(spec.algorithm, family.sigmas(3, spec.algorithm.shift), spec.seed)
    job = TrainingJob(spec, Distributed(0, 1, 0, cpu), family, algorithm, WeightedReward(spec.reward, cpu))
    batch = step_batch(load_prompts(spec.prompts.source), 1, spec.seed, 2, 4, 0, 1, "sharded")
    with torch.no_grad():
        trajectory = job.rollout(batch, job.plan(batch))
    scores = job.score(trajectory, batch)
    inline = [job.reward(trajectory.images[rows], batch.prompts[rows]) for rows in (slice(0, 3), slice(3, 6),
                                                                                   slice(6, 8))]  # fmt: skip
    assert torch.equal(scores.total, torch.cat([total for total, _ in inline]))


def test_chunked_rollouts_train_exactly_on_policy(tmp_path: Path, sfumato_home: Path) -> None:
    """The trained steps forward in the rollout's chunks, so the first ratio is exactly 1."""
    from trainer.run import run

    algorithm = {"total_steps": 1, "sampling_steps": 3, "rollout_chunks": 2, "cfg_scale": 3.0, "kl_beta": 0.04}
    spec = tiny_spec(algorithm=algorithm, samples={"count": 0}, checkpoint={"every": 0})
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["ratio/max_abs_dev"] == 0.0 and metrics["kl"] == 0.0
    assert metrics["time/reward_busy"] > 0
