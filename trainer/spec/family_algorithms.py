"""Which algorithms upstream trains on a model family, where that is narrower than every algorithm.

Flow-Factory (X-GenGroup/Flow-Factory) ships recipes per trainer and model under ``examples/<trainer>/``: for
Qwen-Image ``grpo`` (its GRPO trainer, whose SDE window and dynamics span the GRPO family here: Flow-GRPO, its
fast and Flash variants, DanceGRPO, MixGRPO) and ``nft`` (DiffusionNFT); ``awm`` and ``dgpo`` have recipes for
SD3.5 and FLUX only. FLUX.1 Kontext has the same two (``examples/grpo/lora/flux1_kontext``,
``examples/nft/lora/flux1_kontext``), and so has Qwen-Image-Edit (``examples/grpo/lora/qwen_image_edit_plus``,
``examples/nft/lora/qwen_image_edit_plus``), and so has Wan 2.1 image-to-video (``examples/grpo/lora/wan21_i2v.yaml``,
``examples/nft/lora/wan21_i2v.yaml``). A pair no upstream recipe trains is refused naming both; the families that
predate this table (sd3, flux, wan) keep every algorithm.
"""

from __future__ import annotations

from trainer.spec.forward_family import family_of

UPSTREAM_FORWARD_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "qwen_image": ("diffusion_nft",),
    "flux_kontext": ("diffusion_nft",),
    "qwen_image_edit": ("diffusion_nft",),
    "wan_i2v": ("diffusion_nft",),
}


def unsupported_pair(family: str, algorithm: str) -> str | None:
    """Why upstream does not train ``algorithm`` on ``family``, or None when it does."""
    allowed = UPSTREAM_FORWARD_ALGORITHMS.get(family)
    if allowed is None or family_of(algorithm) == "grpo" or algorithm in allowed:
        return None
    return (
        f"family {family!r} with algorithm {algorithm!r}: no upstream recipe trains this pair (Flow-Factory trains "
        f"{family} with the GRPO family and {', '.join(allowed)}); allowed here: the GRPO algorithms, "
        f"{', '.join(allowed)}"
    )
