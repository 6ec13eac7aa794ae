"""`model.sharding: auto` never shards a forward-process job: its old policy is a copy of the unsharded
trainable weights, so the spec refuses 'fsdp' for the family and auto must not pick it either."""

from __future__ import annotations

import pytest

from tests.trainer.conftest import tiny_spec
from trainer.sharding import choose_sharding
from trainer.spec import parse_spec
from trainer.spec.forward_family import FORWARD_ALGORITHMS


@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
def test_auto_sharding_of_full_fine_tuning_on_cuda_is_ddp_for_the_forward_family(algorithm: str) -> None:
    spec = tiny_spec(
        model={"finetune": "full", "lora_rank": None, "sharding": "auto"},
        resources={"devices": 2, "device_type": "cuda"},
    )
    spec["algorithm"] = {"name": algorithm, "sampling_steps": 8, "group_size": 4, "prompts_per_step": 2}
    assert choose_sharding(parse_spec(spec), world_size=2).strategy == "ddp"
