"""A CLIP model loaded from a local directory, embedding batches of image tensors and prompts.

The model-based rewards (clip_score, pickscore, hpsv2, aesthetic) are all functions of CLIP
embeddings. The directory holds what ``save_pretrained`` writes for a transformers
``CLIPModel``, its tokenizer and its image processor (a hub snapshot such as
openai/clip-vit-large-patch14 has all three). Images are preprocessed as tensors on the
device, batched, the way the CLIP image processor does it (shortest edge resize, bicubic,
centre crop, normalise), not one PIL image at a time. The model runs in the dtype it was
saved in (fp32 or bf16); embeddings come back fp32 and L2-normalised.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F


class ClipEmbedder:
    def __init__(self, path: str, device: torch.device) -> None:
        from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

        directory = Path(path)
        self.device = device
        self.model = CLIPModel.from_pretrained(directory, dtype="auto").to(device).eval().requires_grad_(False)
        self.dtype = next(self.model.parameters()).dtype
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        processor = AutoImageProcessor.from_pretrained(directory)
        self.size = shortest_edge(processor.size)
        crop = processor.crop_size
        self.crop = (crop, crop) if isinstance(crop, int) else (field(crop, "height"), field(crop, "width"))
        self.mean = torch.tensor(processor.image_mean, device=device).reshape(1, 3, 1, 1)
        self.std = torch.tensor(processor.image_std, device=device).reshape(1, 3, 1, 1)
        positions = self.model.config.text_config.max_position_embeddings
        self.max_tokens = min(positions, self.tokenizer.model_max_length)

    @property
    def logit_scale(self) -> float:
        return float(self.model.logit_scale.exp())

    def pixels(self, images: torch.Tensor) -> torch.Tensor:
        """[B, 3, H, W] in [0, 1] → the model's normalised input at its crop size."""
        return preprocessed(images.to(self.device), self.size, self.crop, self.mean, self.std).to(self.dtype)

    @torch.no_grad()
    def image_embeds(self, images: torch.Tensor) -> torch.Tensor:
        pooled = self.model.vision_model(pixel_values=self.pixels(images)).pooler_output
        return F.normalize(self.model.visual_projection(pooled).float(), dim=-1)

    @torch.no_grad()
    def text_embeds(self, prompts: list[str]) -> torch.Tensor:
        tokens = self.tokenizer(
            prompts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt"
        ).to(self.device)
        pooled = self.model.text_model(input_ids=tokens.input_ids, attention_mask=tokens.attention_mask).pooler_output
        return F.normalize(self.model.text_projection(pooled).float(), dim=-1)

    def cosine(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        """cos(image_n, prompt_n) per row."""
        return (self.image_embeds(images) * self.text_embeds(prompts)).sum(dim=-1)


def preprocessed(
    images: torch.Tensor, size: int, crop: tuple[int, int], mean: torch.Tensor, std: torch.Tensor
) -> torch.Tensor:
    """[B, 3, H, W] in [0, 1] → resized (shortest edge to ``size``, bicubic), centre-cropped and normalised."""
    images = images.float()
    height, width = images.shape[-2:]
    scale = size / min(height, width)
    resized = (max(size, round(height * scale)), max(size, round(width * scale)))
    images = F.interpolate(images, size=resized, mode="bicubic", antialias=True, align_corners=False)
    top, left = (resized[0] - crop[0]) // 2, (resized[1] - crop[1]) // 2
    images = images[..., top : top + crop[0], left : left + crop[1]].clamp(0, 1)
    return (images - mean) / std


def shortest_edge(size: object) -> int:
    if isinstance(size, int):
        return size
    return field(size, "shortest_edge") or min(field(size, "height"), field(size, "width"))


def field(size: object, key: str) -> int:
    """A size entry from a plain dict (older processors) or a ``SizeDict`` (transformers 5)."""
    value = size.get(key) if isinstance(size, dict) else getattr(size, key, None)
    return int(value) if value is not None else 0
