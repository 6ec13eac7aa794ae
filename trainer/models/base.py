"""What the trainer needs from a model family: prompt encoding, the velocity call, decoding.

A family owns the frozen parts (VAE, text encoder) and knows how to call its transformer; the
transformer itself (possibly LoRA-wrapped, possibly inside DDP) is passed in by the caller, so
rollout, training and the KL reference all go through the same ``velocity`` code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from trainer.sampling.schedule import CheckpointSchedule
from trainer.spec import SpecError


@dataclass
class Conditioning:
    """Per-sample conditioning of one prompt row: its text embeddings and, for the families that edit or animate
    an image (``trainer.spec.model.IMAGE_FAMILIES``), that row's encoded conditioning image. ``index`` selects
    rows, ``cat`` stacks for CFG; every field travels alike, so rollout, training, the KL reference and every
    executor reach a family's ``forward`` with the row's image beside its text."""

    hidden: torch.Tensor
    pooled: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    image: torch.Tensor | None = None  # the conditioning image's latents, one per row, as the family encoded them
    image_tokens: torch.Tensor | None = None  # its image encoder's tokens (Wan I2V's CLIP states), one set per row

    def tensors(self) -> list[torch.Tensor | None]:
        return [self.hidden, self.pooled, self.mask, self.image, self.image_tokens]

    def _map(self, change: Callable[[torch.Tensor], torch.Tensor]) -> Conditioning:
        return Conditioning(*[None if t is None else change(t) for t in self.tensors()])  # type: ignore[arg-type]

    def index(self, rows: torch.Tensor | list[int]) -> Conditioning:
        return self._map(lambda t: t[rows])

    def repeat_to(self, batch: int) -> Conditioning:
        return self.index([0] * batch)

    def to(self, device: torch.device) -> Conditioning:
        """These embeddings on ``device`` (from pinned host memory the copy does not wait for the host)."""
        if self.hidden.device.type == device.type:
            return self
        return self._map(lambda t: t.to(device, non_blocking=True))

    def pinned(self) -> Conditioning:
        """A host copy, page-locked where an accelerator will read it."""
        if torch.cuda.is_available():
            return self._map(lambda t: t.cpu().pin_memory())
        return self._map(lambda t: t.cpu())

    @staticmethod
    def cat(parts: list[Conditioning]) -> Conditioning:
        """Stacked; masked embeddings of several lengths (Qwen-Image's) zero-padded to the longest, masked out."""
        pooled = None if parts[0].pooled is None else torch.cat([p.pooled for p in parts])  # type: ignore[misc]
        image = None if parts[0].image is None else torch.cat([p.image for p in parts])  # type: ignore[misc]
        tokens = None if parts[0].image_tokens is None else torch.cat([p.image_tokens for p in parts])  # type: ignore[misc]
        if parts[0].mask is None:
            return Conditioning(torch.cat([p.hidden for p in parts]), pooled, image=image, image_tokens=tokens)
        longest = max(p.hidden.shape[1] for p in parts)
        hidden = [nn.functional.pad(p.hidden, (0, 0, 0, longest - p.hidden.shape[1])) for p in parts]
        mask = [nn.functional.pad(p.mask, (0, longest - p.mask.shape[1])) for p in parts]  # type: ignore[union-attr]
        return Conditioning(torch.cat(hidden), pooled, torch.cat(mask), image, tokens)


class ModelFamily(ABC):
    """One diffusers architecture: frozen encoders/decoder plus the transformer call."""

    transformer: nn.Module
    latent_shape: tuple[int, ...]
    lora_targets: tuple[str, ...]
    schedule: CheckpointSchedule
    image_tokens: int  # transformer tokens of one sample: what a pipeline's dynamic shifting counts
    compute_dtype: torch.dtype = torch.float32  # the transformer runs under autocast in it (model.precision)
    text_encoder_fields: tuple[str, ...] = ()  # the attributes holding the frozen text encoders
    encoder_device: torch.device  # where they run
    text_encoders_freed = False  # model.text_encoders 'free': dropped once the prompt set was encoded

    def text_encoders(self) -> list[nn.Module]:
        found: list[nn.Module] = []
        for name in self.text_encoder_fields:
            value = getattr(self, name, None)
            found.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, nn.Module))
        return found

    def place_text_encoders(self, where: str) -> None:
        """``model.text_encoders`` once the prompt set is encoded: 'cpu' moves the encoders to the host, where any
        prompt met later is encoded; 'free' drops them; 'gpu' leaves them on the job's device."""
        if where == "cpu":
            for module in self.text_encoders():
                module.to("cpu")
            self.encoder_device = torch.device("cpu")
        elif where == "free":
            for name in self.text_encoder_fields:
                setattr(self, name, None)
            self.text_encoders_freed = True

    def use_compute_precision_vae(self) -> None:
        """The frozen VAE is held and run in the compute precision (decode casts the latents to it)."""
        self.vae.to(self.compute_dtype)  # type: ignore[attr-defined]

    def sigmas(self, steps: int, shift: float | None = None) -> torch.Tensor:
        """The checkpoint's own σ grid for ``steps`` steps at this family's sample size (``shift`` overrides)."""
        return self.schedule.sigmas(steps, self.image_tokens, shift)

    @abstractmethod
    def encode_prompts(self, prompts: list[str]) -> Conditioning: ...

    @abstractmethod
    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        """One transformer evaluation: velocity for latents x at noise level σ (shape [B])."""

    @abstractmethod
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Latents → images in [0, 1], NCHW (video: the frames stacked on the batch axis)."""

    def velocity(
        self,
        module: nn.Module,
        x: torch.Tensor,
        sigma: torch.Tensor,
        cond: Conditioning,
        uncond: Conditioning | None,
        cfg_scale: float,
    ) -> torch.Tensor:
        """The policy's velocity: CFG-combined when cfg_scale > 1, one batched [uncond, cond] pass. Latents,
        σ and embeddings go in as they are (fp32); the transformer computes in the compute precision."""
        with self.compute_precision(x.device):
            if cfg_scale <= 1.0 or uncond is None:
                return self.forward(module, x, sigma, cond).float()
            pair = Conditioning.cat([uncond, cond])
            both = self.forward(module, torch.cat([x, x]), torch.cat([sigma, sigma]), pair)
        v_uncond, v_cond = both.float().chunk(2)
        return self.guide(v_uncond, v_cond, cfg_scale)

    def guide(self, v_uncond: torch.Tensor, v_cond: torch.Tensor, cfg_scale: float) -> torch.Tensor:
        """Classifier-free guidance as the family's pipeline combines the two velocities."""
        return v_uncond + cfg_scale * (v_cond - v_uncond)

    def compute_precision(self, device: torch.device) -> AbstractContextManager[object]:
        """Autocast to the compute precision (fp32 runs as it is): matrix products in bf16/fp16 while the
        weights, and the timestep embedding's input, stay as they are held."""
        if self.compute_dtype == torch.float32:
            return nullcontext()
        return torch.autocast(device.type, dtype=self.compute_dtype)


def latent_size(resolution: tuple[int, int], vae_scale: int, patch: int) -> tuple[int, int]:
    """(latent height, latent width) of a [height, width] pixel image this checkpoint takes: each side a
    multiple of its VAE scale × patch size (the spec checks 16, the released checkpoints' factors)."""
    step = vae_scale * patch
    for side, pixels in zip(("height", "width"), resolution, strict=True):
        if pixels % step:
            message = f"{side} {pixels}: this checkpoint needs a multiple of {step} (VAE {vae_scale} × patch {patch})"
            raise SpecError("model.resolution", message)
    return resolution[0] // vae_scale, resolution[1] // vae_scale


def denormalised(latents: torch.Tensor, vae: nn.Module) -> torch.Tensor:
    """Video latents [B, C, F, H, W] as a Wan-style VAE (Wan's, Qwen-Image's) decodes them: scaled back by its
    ``latents_std`` and ``latents_mean`` (the pipelines' step before ``vae.decode``), in the VAE's precision."""
    config = vae.config  # type: ignore[union-attr]
    shape = (1, config.z_dim, 1, 1, 1)
    mean = torch.tensor(config.latents_mean, device=latents.device).view(shape)
    std = torch.tensor(config.latents_std, device=latents.device).view(shape)
    return (latents.float() * std + mean).to(vae.dtype)  # type: ignore[arg-type]


def vae_scale(vae: nn.Module) -> int:
    """Pixels per latent side: 2 per down block after the first (the pipelines' ``vae_scale_factor``)."""
    return int(2 ** (len(vae.config.block_out_channels) - 1))  # type: ignore[union-attr]
