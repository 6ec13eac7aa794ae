"""Algorithm name → class."""

from __future__ import annotations

import torch

from trainer.algorithms.awm import AWM
from trainer.algorithms.base import Algorithm
from trainer.algorithms.dance_grpo import DanceGRPO
from trainer.algorithms.dgpo import DGPO
from trainer.algorithms.diffusion_nft import DiffusionNFT
from trainer.algorithms.flash_grpo import FlashGRPO
from trainer.algorithms.flow_grpo import FlowGRPO
from trainer.algorithms.flow_grpo_fast import FlowGRPOFast
from trainer.algorithms.mix_grpo import MixGRPO
from trainer.algorithms.mix_grpo_flash import MixGRPOFlash
from trainer.spec import AlgorithmSpec

ALGORITHM_CLASSES: dict[str, type[Algorithm]] = {
    "flow_grpo": FlowGRPO,
    "flow_grpo_fast": FlowGRPOFast,
    "dance_grpo": DanceGRPO,
    "flash_grpo": FlashGRPO,
    "mix_grpo": MixGRPO,
    "mix_grpo_flash": MixGRPOFlash,
    "diffusion_nft": DiffusionNFT,
    "awm": AWM,
    "dgpo": DGPO,
}


def make_algorithm(spec: AlgorithmSpec, sigmas: torch.Tensor, seed: int) -> Algorithm:
    return ALGORITHM_CLASSES[spec.name](spec, sigmas, seed)
