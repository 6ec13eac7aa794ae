"""A 12-step run on builtin:shapes (the README's first job, shortened) raises the reward by a clear margin under
each forward-process method: DiffusionNFT, AWM and DGPO with their upstream defaults, KL terms included
(kl_beta 1e-4 nft and awm, 1e-3 dgpo; AWM's EMA-KL at 1).

The run is the demo with the GRPO family's step options (noise_level, clip_range) left out, its first two eval
prompts as the whole prompt set, both drawn every step with 4 samples each (8 samples a step, half the other
shapes tests' 16), samples off. Gain = mean reward of the last 3 steps minus the first 3; each run took
16-76 seconds with the imports and the model on a 2-core machine shared with other test runs.

Measured gains (seeds 0, 1, 2, 3, 4) at 2 prompts × 4 samples, the configuration here, with the KL defaults:

- diffusion_nft: 0.251, 0.239, 0.158, 0.427, 0.253 (mean 0.266, sd 0.098);
- awm: 0.209, 0.260, 0.180, 0.181, 0.153 (mean 0.197, sd 0.041);
- dgpo: 0.234, 0.265, 0.224, 0.254, 0.186 (mean 0.233, sd 0.031).

Before them (kl_beta 0, no EMA-KL, the old policy's decay counted one step ahead for NFT and two for DGPO) the same
seeds gained nft 0.239, 0.228, 0.148, 0.427, 0.254; awm 0.212, 0.277, 0.180, 0.187, 0.156; dgpo 0.247, 0.278, 0.256,
0.266, 0.247: the change costs DGPO about 0.026 of mean gain over 12 steps and moves the others by less than their
spread.

MARGIN = 0.07 is about half the smallest gain (0.153), and 3.1 standard deviations below AWM's mean.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tests.trainer.conftest import read_metrics, write_spec
from trainer.run import run
from trainer.spec.forward_family import FORWARD_ALGORITHMS

REPO = Path(__file__).resolve().parents[2]
STEPS = 12
PROMPTS = 2
WINDOW = 3
MARGIN = 0.07


@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
def test_a_forward_method_raises_the_shapes_reward_by_a_clear_margin(
    tmp_path: Path, sfumato_home: Path, algorithm: str
) -> None:
    spec = json.loads((REPO / "examples" / "shapes-demo.json").read_text())
    eval_prompts = spec["prompts"]["eval"][:PROMPTS]
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(eval_prompts) + "\n")
    spec["prompts"].update(source=str(prompts), eval=eval_prompts)
    for grpo_option in ("noise_level", "clip_range"):
        del spec["algorithm"][grpo_option]
    spec["algorithm"].update(name=algorithm, total_steps=STEPS, prompts_per_step=PROMPTS, group_size=4)
    spec["samples"] = {"count": 0}
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    rewards = [step["reward/mean"] for step in read_metrics(tmp_path / "out")]
    gain = statistics.mean(rewards[-WINDOW:]) - statistics.mean(rewards[:WINDOW])
    assert gain > MARGIN, f"reward per step: {rewards}"
