"""Each sample's own standard-normal stream, drawn on the job's device.

A sample's noise comes from a generator of its own, seeded by what it is (trainer/seeding.py), so an
executor that rolls out rows in other groupings or orders draws exactly native's noise. The generator
lives on the latents' device, so noise is never drawn on the host and copied over at every step. The
``meta`` device has no generator (and no values): there the draw only gives the shape.
"""

from __future__ import annotations

import torch


class SampleNoise:
    def __init__(
        self,
        generators: list[torch.Generator | None],
        device: torch.device,
        starts: list[torch.Generator | None] | None = None,
    ) -> None:
        self.generators = generators
        self.device = device
        self.starts = starts  # x_0's streams where they are not the rows' own (one per group: init_same_noise)

    @classmethod
    def seeded(cls, seeds: list[int], device: torch.device, start_seeds: list[int] | None = None) -> SampleNoise:
        """One stream per seed, on ``device``; ``start_seeds``: x_0 is drawn from streams of these seeds."""
        starts = None if start_seeds is None else cls.seeded(start_seeds, device).generators
        if device.type == "meta":
            return cls([None] * len(seeds), device, starts)
        return cls([torch.Generator(device=device).manual_seed(seed) for seed in seeds], device, starts)

    def subset(self, rows: list[int]) -> SampleNoise:
        """The streams of ``rows``, continuing where they are (not copies)."""
        starts = None if self.starts is None else [self.starts[row] for row in rows]
        return SampleNoise([self.generators[row] for row in rows], self.device, starts)

    def initial(self, shape: tuple[int, ...]) -> torch.Tensor:
        """[rows, *shape] x_0: each row's first draw (or its start stream's)."""
        streams = self.generators if self.starts is None else self.starts
        return torch.stack([self.draw(shape, generator) for generator in streams])

    def step(self, shape: tuple[int, ...], stochastic: list[bool]) -> torch.Tensor:
        """[rows, *shape] one step's noise: a draw from each stochastic row's stream, zeros elsewhere (no draw,
        so a row's stream advances only at its SDE steps)."""
        zeros = torch.zeros(shape, device=self.device)
        rows = [self.draw(shape, g) if draw else zeros for g, draw in zip(self.generators, stochastic, strict=True)]
        return torch.stack(rows)

    def draw(self, shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
        return torch.randn(shape, generator=generator, device=self.device)
