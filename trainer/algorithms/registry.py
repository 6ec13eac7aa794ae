"""Algorithm name → class."""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm
from trainer.algorithms.flow_grpo import FlowGRPO
from trainer.spec import AlgorithmSpec

ALGORITHM_CLASSES: dict[str, type[Algorithm]] = {
    "flow_grpo": FlowGRPO,
}


def make_algorithm(spec: AlgorithmSpec, sigmas: torch.Tensor, seed: int) -> Algorithm:
    return ALGORITHM_CLASSES[spec.name](spec, sigmas, seed)
