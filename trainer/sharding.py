"""How the ranks hold the transformer: full replicas with averaged gradients (DDP), or FSDP2 shards.

DDP keeps a whole copy per rank and averages gradients in one coalesced all-reduce
(``TrainingJob.synchronize_gradients``): right for LoRA, whose adapter is small, and for small models.
FSDP2 (``torch.distributed.fsdp.fully_shard``) splits weights, gradients and optimizer state over the
ranks and reduce-scatters gradients during backward (native), or once per optimizer step after the Lean
executors', jagg's and its compositions' backwards (``trainer/fsdp_gradients.py``): what full fine-tuning of
a real model needs on CUDA. Checkpoints and the exported model are gathered back to ordinary full tensors: the
export is a plain ``save_pretrained`` directory; a checkpoint resumes under the strategy that wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from trainer.spec import JobSpec
from trainer.spec.sharding_choice import Strategy, sharding_choice


@dataclass(frozen=True)
class Sharding:
    strategy: Strategy
    reason: str

    @property
    def fsdp(self) -> bool:
        return self.strategy == "fsdp"

    def describe(self) -> str:
        return f"sharding {self.strategy} ({self.reason})"


def choose_sharding(spec: JobSpec, world_size: int) -> Sharding:
    """The strategy the spec asks for (trainer/spec/sharding_choice.py), with its reason."""
    return Sharding(*sharding_choice(spec, world_size))


def shard_module(module: nn.Module, compute_dtype: torch.dtype = torch.float32) -> None:
    """FSDP2 in place: each transformer block its own unit (gathered only while it runs), then the rest.
    The shards stay fp32; a unit is gathered in the compute precision and its gradients are reduced in fp32
    (the reference trainers' mixed precision). Inputs are not cast: the timestep reaches the model in fp32,
    and autocast (``ModelFamily.velocity``) casts what the matrix products read."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32, cast_forward_inputs=False)
    for name, child in module.named_modules():
        if isinstance(child, nn.ModuleList) and name.rsplit(".", 1)[-1].endswith("blocks"):
            for block in child:
                fully_shard(block, mp_policy=policy)
    fully_shard(module, mp_policy=policy)


def full_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every weight as a full CPU tensor on rank 0 (other ranks get an empty dict); a collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(module, options=options)


def load_full_state(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Shard a full state dict (read by every rank) into the FSDP module; a collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    set_model_state_dict(module, state, options=StateDictOptions(full_state_dict=True))


def full_optimizer_state(module: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer state keyed by parameter name, with full tensors, on rank 0; a collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_optimizer_state_dict(module, optimizer, options=options)


def load_full_optimizer_state(module: nn.Module, optimizer: torch.optim.Optimizer, state: dict) -> None:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    set_optimizer_state_dict(module, optimizer, state, options=StateDictOptions(full_state_dict=True))


def local_value(tensor: torch.Tensor) -> torch.Tensor:
    """A replicated DTensor (FSDP's gradient norm) as a plain tensor; a plain tensor as itself."""
    from torch.distributed.tensor import DTensor

    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def plain_copy(module: nn.Module, weights: dict[str, torch.Tensor]) -> nn.Module:
    """An ordinary (unsharded) instance of the FSDP module's own class holding ``weights``, for export."""
    from torch.distributed.fsdp import FSDPModule

    plain_class = next(c for c in type(module).__mro__ if not issubclass(c, FSDPModule))
    plain = plain_class.from_config(module.config)  # type: ignore[attr-defined]
    dtype = next(iter(weights.values())).dtype
    if plain.dtype != dtype:
        plain.to(dtype)
    plain.load_state_dict(weights)
    return plain
