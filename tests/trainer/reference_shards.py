"""``python -m tests.trainer.reference_shards --spec S --out P`` under torchrun: what each rank holds of the KL
reference under FSDP full fine-tuning, written to ``P.<rank>`` as JSON.

Per parameter, after set-up and after one training step with the KL: the placements and the local shape of the
reference's tensor beside the policy's, the full shape, and whether the local shard equals the policy's at
set-up. The step's ``memory/reference`` (the reference's bytes on this rank), the full weights' bytes and the
buffers' (not sharded) close it.
The test judges the files after the run, so a rank's wrong answer neither hangs the other nor hides.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainer.executors.registry import make_executor
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import parse_spec
from trainer.step_memory import measure_step


def held(module: nn.Module) -> dict[str, dict[str, Any]]:
    """Each parameter's placements, local shape and full shape on this rank."""
    found = {}
    for name, param in module.named_parameters():
        local = param.to_local() if hasattr(param, "to_local") else param
        placements = [str(p) for p in getattr(param, "placements", ())]
        found[name] = {"placements": placements, "local": list(local.shape), "full": list(param.shape)}
    return found


def local(param: torch.Tensor) -> torch.Tensor:
    return param.to_local() if hasattr(param, "to_local") else param


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spec = parse_spec(json.loads(args.spec.read_text()))
    job = TrainingJob.build(spec, "sharded")
    assert job.reference is not None
    pairs = zip(job.reference.parameters(), job.policy.parameters(), strict=True)
    same = [bool(torch.equal(local(mine), local(theirs))) for mine, theirs in pairs]
    at_set_up = {"reference": held(job.reference), "policy": held(job.policy)}
    algo = spec.algorithm
    rank, ranks = job.dist.rank, job.dist.world_size
    batch = step_batch(job.prompts, 1, spec.seed, algo.prompts_per_step, algo.group_size, rank, ranks, "sharded")
    trainer = make_executor(spec.executor, job)
    result, memory = measure_step(job, lambda: trainer.train_step(batch))
    report = {
        "sharding": job.sharding.strategy,
        "set_up": at_set_up,
        "equal_to_policy_shard": same,
        "after_step": held(job.reference),
        "kl": float(result.metrics["kl"]),
        "memory_reference": memory.reference,
        "full_bytes": sum(p.numel() * p.element_size() for p in job.reference.parameters()),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in job.reference.buffers()),
    }
    Path(f"{args.out}.{job.dist.rank}").write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
