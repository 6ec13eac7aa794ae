"""The two training loops that make ``builtin:shapes``: its VAE, then its flow-matching transformer.

Both draw fresh scenes from the procedural dataset every step (``shapes_dataset``) from one seeded
generator, on one CPU thread with deterministic algorithms, so a build is the same bit for bit on
the same machine and torch version.

- The VAE is trained as Stable Diffusion's was, in miniature: reconstruction (MSE in [-1, 1]) plus
  a small KL term on the diagonal Gaussian posterior.
- The transformer is trained with the rectified-flow objective SD3 uses (Esser et al., 2024,
  "Scaling Rectified Flow Transformers for High-Resolution Image Synthesis"): x_σ = (1 − σ)·x₀ + σ·ε
  and the target velocity ε − x₀, on latents scaled by the VAE's ``shift_factor``/``scaling_factor``.
  Captions are dropped to "" one time in ten so that classifier-free guidance works.
  The forward is ``SD3Family.forward``: the exact call the RL trainer makes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from trainer.models.base import Conditioning
from trainer.models.shapes_dataset import random_batch

Progress = Callable[[str, int, int, float], None]  # (stage, step, total, loss)
VAE_KL_WEIGHT = 1e-3
CAPTION_DROPOUT = 0.1
# Constant after warm-up (no decay to a planned end), so a build of N steps is exactly the first N steps
# of any longer build: the step count can be chosen by looking at snapshots of one run.
TRANSFORMER_RATE = 1e-3


def warmup_rate(step: int, peak: float, warmup: int = 50) -> float:
    return peak * min(1.0, (step + 1) / warmup)


def cosine_rate(step: int, total: int, peak: float) -> float:
    return warmup_rate(step, peak) * 0.5 * (1 + math.cos(math.pi * step / total))


def train_vae(vae: nn.Module, steps: int, batch: int, generator: torch.Generator, progress: Progress) -> None:
    optimizer = torch.optim.AdamW(vae.parameters(), lr=2e-3, weight_decay=0.0)
    pixels = 3 * 32 * 32
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = cosine_rate(step, steps, 2e-3)
        images, _ = random_batch(batch, generator)
        x = images * 2 - 1
        posterior = vae.encode(x).latent_dist
        reconstruction = vae.decode(posterior.sample(generator=generator)).sample
        mse = ((reconstruction - x) ** 2).mean()
        loss = mse + VAE_KL_WEIGHT * posterior.kl().mean() / pixels
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        progress("vae", step, steps, mse.item())
    vae.eval().requires_grad_(False)


@torch.no_grad()
def latent_statistics(vae: nn.Module, generator: torch.Generator, count: int = 512) -> tuple[float, float]:
    """(shift_factor, scaling_factor): the mean and 1/std of the latents, as SD3's VAE config records them."""
    images, _ = random_batch(count, generator)
    latents = vae.encode(images * 2 - 1).latent_dist.mode()
    return latents.mean().item(), 1.0 / latents.std().item()


def train_transformer(
    family: object,
    steps: int,
    batch: int,
    generator: torch.Generator,
    progress: Progress,
) -> None:
    """Flow matching on ``family.transformer`` (an ``SD3Family``, weights already loaded from disk)."""
    transformer: nn.Module = family.transformer  # type: ignore[attr-defined]
    vae: nn.Module = family.vae  # type: ignore[attr-defined]
    transformer.train().requires_grad_(True)
    optimizer = torch.optim.AdamW(transformer.parameters(), lr=TRANSFORMER_RATE, weight_decay=0.0)
    config = vae.config
    cache: dict[str, Conditioning] = {}

    def encoded(prompts: list[str]) -> Conditioning:
        for prompt in prompts:
            if prompt not in cache:
                cache[prompt] = family.encode_prompts([prompt])  # type: ignore[attr-defined]
        return Conditioning.cat([cache[prompt] for prompt in prompts])

    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = warmup_rate(step, TRANSFORMER_RATE)
        images, captions = random_batch(batch, generator)
        dropped = torch.rand(batch, generator=generator) < CAPTION_DROPOUT
        captions = ["" if drop else text for drop, text in zip(dropped.tolist(), captions, strict=True)]
        with torch.no_grad():
            latents = vae.encode(images * 2 - 1).latent_dist.mode()
            x0 = (latents - config.shift_factor) * config.scaling_factor
        noise = torch.randn(x0.shape, generator=generator)
        sigma = torch.rand(batch, generator=generator)
        s = sigma.view(-1, 1, 1, 1)
        x = (1 - s) * x0 + s * noise
        velocity = family.forward(transformer, x, sigma, encoded(captions))  # type: ignore[attr-defined]
        loss = ((velocity - (noise - x0)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        progress("transformer", step, steps, loss.item())
    transformer.eval().requires_grad_(False)
