"""Which samples each rank generates at a step.

Every rank draws the step's prompts from the same step-seeded generator (without replacement
while the pool is large enough, as Flow-GRPO's sampler does: two groups of one prompt in a step
would only add noise to the step's mean reward), numbers the global
samples s = p·G + m (prompt p, member m), and takes its own slice. Each sample carries its
integer group id p and global id s, so advantages never depend on decoding prompts, and every
noise stream can be keyed by (seed, step, s) whatever the layout.

- ``sharded``: rank r takes the contiguous block of samples [r·B, (r+1)·B); groups stay
  mostly on one rank.
- ``shared``: rank r takes members m ≡ r (mod R) of every prompt: all ranks hold the same
  prompts with different samples (the layout the Lean executors need; G must divide by R).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.seeding import step_generator


@dataclass
class SampleBatch:
    step: int
    prompts: list[str]
    group_ids: torch.Tensor  # [B] long, global prompt-group index
    sample_ids: torch.Tensor  # [B] long, global sample index
    global_size: int


def layout_error(prompts_per_step: int, group_size: int, world_size: int, layout: str) -> str | None:
    total = prompts_per_step * group_size
    if total % world_size:
        return f"prompts_per_step × group_size = {total} samples do not divide over {world_size} ranks"
    if layout == "shared" and group_size % world_size:
        return f"the shared-prompt layout needs group_size ({group_size}) divisible by {world_size} ranks"
    return None


def step_batch(
    pool: list[str],
    step: int,
    seed: int,
    prompts_per_step: int,
    group_size: int,
    rank: int,
    world_size: int,
    layout: str = "sharded",
) -> SampleBatch:
    generator = step_generator(seed, step, "prompts")
    if prompts_per_step <= len(pool):
        chosen = torch.randperm(len(pool), generator=generator)[:prompts_per_step]
    else:
        chosen = torch.randint(len(pool), (prompts_per_step,), generator=generator)
    total = prompts_per_step * group_size
    all_ids = torch.arange(total)
    if layout == "shared":
        local = all_ids[(all_ids % group_size) % world_size == rank]
    else:
        per_rank = total // world_size
        local = all_ids[rank * per_rank : (rank + 1) * per_rank]
    groups = local // group_size
    return SampleBatch(step, [pool[int(chosen[g])] for g in groups], groups, local, total)
