"""The unit digenrl streams from a generator to a trainer: one finished sample (GAP).

A unit carries what the trainer needs to replay the sample's trained steps and weigh them:
the latent trajectory, the generating policy's log-probs (the ratio's denominator), the
reward and its parts, the group and sample ids, and the version of the weights that generated
it. It travels as one flat float64 tensor of a size fixed by the spec (fp32 values and ids are
exact in float64), so gloo send/recv need no shape exchange.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

HEADER = 3  # sample id, group id, version


@dataclass
class Unit:
    sample_id: int
    group_id: int
    version: int
    reward: float
    parts: list[float]  # one raw score per reward in the spec, in spec order
    log_probs: torch.Tensor  # [T]
    latents: torch.Tensor  # [T+1, *latent]

    def pack(self) -> torch.Tensor:
        values = [self.sample_id, self.group_id, self.version, self.reward, *self.parts]
        head = torch.tensor(values, dtype=torch.float64)
        return torch.cat([head, self.log_probs.double().reshape(-1), self.latents.double().reshape(-1)])


def unit_size(steps: int, latent_shape: tuple[int, ...], parts: int) -> int:
    return HEADER + 1 + parts + steps + (steps + 1) * int(torch.Size(latent_shape).numel())


def unpack(flat: torch.Tensor, steps: int, latent_shape: tuple[int, ...], parts: int) -> Unit:
    head = HEADER + 1 + parts
    log_probs = flat[head : head + steps].float()
    latents = flat[head + steps :].float().reshape(steps + 1, *latent_shape)
    values = flat[:head].tolist()
    return Unit(int(values[0]), int(values[1]), int(values[2]), values[3], values[4:], log_probs, latents)
