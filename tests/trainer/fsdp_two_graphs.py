"""``torchrun --nproc-per-node 2 -m tests.trainer.fsdp_two_graphs MODEL_DIR OUT``: one backward through two forward
graphs of an FSDP2 transformer, with and without ``gathered_through_backward``.

The tiny SD3 transformer is sharded as the trainer shards it (``shard_module``) and its collectives counted as the
trainer counts them (``count_collectives``). Twice, from the same weights and inputs: two forwards with grad (two
batches, as JAGG's group endpoints), then one backward with the reduction deferred; rank 0 writes the all-gathers
the backward issued, the FSDP units, whether every unit was sharded again afterwards, and the largest difference
between the two backwards' gradients.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
from diffusers import SD3Transformer2DModel

from trainer.fsdp_gradients import (
    CollectiveCounts,
    count_collectives,
    gathered_through_backward,
    reduction_deferred,
    units,
    unsharded_parameters,
)
from trainer.sharding import shard_module


def inputs(model: SD3Transformer2DModel, seed: int) -> dict[str, torch.Tensor]:
    config, generator = model.config, torch.Generator().manual_seed(seed)
    size = config.sample_size
    return {
        "hidden_states": torch.randn(2, config.in_channels, size, size, generator=generator),
        "encoder_hidden_states": torch.randn(2, 3, config.joint_attention_dim, generator=generator),
        "pooled_projections": torch.randn(2, config.pooled_projection_dim, generator=generator),
        "timestep": torch.tensor([250.0, 750.0]),
    }


def joint_backward(
    model: SD3Transformer2DModel, counts: CollectiveCounts, scope: AbstractContextManager[None]
) -> tuple[int, list[torch.Tensor]]:
    """Two forwards, one backward through both: the backward's all-gathers and the full gradients it left."""
    slots = unsharded_parameters(model, [p for p in model.parameters() if p.requires_grad])
    with reduction_deferred(model):
        outputs = [model(**inputs(model, seed), return_dict=False)[0] for seed in (1, 2)]
        before = counts.all_gathers
        with scope:
            torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
        gathers = counts.all_gathers - before
    grads = [slot.grad.clone() for slot in slots]  # type: ignore[union-attr]
    for slot in slots:
        slot.grad = None
    return gathers, grads


def main(model_dir: Path, out: Path) -> int:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = SD3Transformer2DModel.from_pretrained(model_dir / "transformer")
    shard_module(model)
    counts = CollectiveCounts()
    count_collectives(model, counts)
    plain, plain_grads = joint_backward(model, counts, nullcontext())
    for unit in units(model):
        unit.reshard()
    gathered, gathered_grads = joint_backward(model, counts, gathered_through_backward(model, sharded=True))
    resharded = all(unit._get_fsdp_state()._fsdp_param_group.is_sharded for unit in units(model))  # type: ignore[union-attr]
    difference = max(float((a - b).abs().max()) for a, b in zip(plain_grads, gathered_grads, strict=True))
    if dist.get_rank() == 0:
        report = {
            "units": len(units(model)),
            "plain_all_gathers": plain,
            "gathered_all_gathers": gathered,
            "resharded_after": resharded,
            "max_grad_difference": difference,
        }
        out.write_text(json.dumps(report))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
