"""ImageReward (github.com/THUDM/ImageReward, ImageReward/ImageReward.py): BLIP's text encoder reads the prompt with
cross-attention to the image, and an MLP on its first token's state gives the reward, standardised by the mean
and standard deviation ImageReward ships (0.16717362830052426, 1.0333394966054072).

The directory holds the BLIP model as transformers' ``BlipForImageTextRetrieval`` (``save_pretrained``), its
tokenizer and image processor, and the MLP head as ``imagereward_mlp.safetensors`` with ImageReward's keys
(``layers.0.weight`` ... ``layers.7.bias``; the ``mlp.`` prefix of ImageReward.pt may stay). As upstream, the
prompt is padded to 35 tokens and the image resized (shortest edge, bicubic), centre-cropped to the vision model's
size and normalised with the processor's mean and deviation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from trainer.rewards.aesthetic import aesthetic_head
from trainer.rewards.clip_embedding import preprocessed

HEAD_FILE = "imagereward_mlp.safetensors"
REWARD_MEAN = 0.16717362830052426
REWARD_STD = 1.0333394966054072
PROMPT_TOKENS = 35


def make_imagereward(path: str, device: torch.device) -> Callable[[torch.Tensor, list[str]], torch.Tensor]:
    from safetensors.torch import load_file
    from transformers import AutoImageProcessor, AutoTokenizer, BlipForImageTextRetrieval

    directory = Path(path)
    blip = BlipForImageTextRetrieval.from_pretrained(directory, dtype="auto").to(device).eval().requires_grad_(False)
    dtype = next(blip.parameters()).dtype
    tokenizer = AutoTokenizer.from_pretrained(directory)
    processor = AutoImageProcessor.from_pretrained(directory)
    size = blip.config.vision_config.image_size
    mean = torch.tensor(processor.image_mean, device=device).reshape(1, 3, 1, 1)
    std = torch.tensor(processor.image_std, device=device).reshape(1, 3, 1, 1)
    if not (directory / HEAD_FILE).exists():
        raise FileNotFoundError(f"no ImageReward head in {directory}: expected {HEAD_FILE}")
    state = load_file(str(directory / HEAD_FILE))
    head = aesthetic_head(blip.config.text_config.hidden_size)  # ImageReward's MLP has LAION's layout
    head.load_state_dict({key.removeprefix("mlp.").removeprefix("layers."): value for key, value in state.items()})
    head = head.to(device).eval().requires_grad_(False)

    @torch.no_grad()
    def imagereward(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        pixels = preprocessed(images.to(device), size, (size, size), mean, std).to(dtype)
        image_embeds = blip.vision_model(pixel_values=pixels).last_hidden_state
        tokens = tokenizer(
            prompts, padding="max_length", truncation=True, max_length=PROMPT_TOKENS, return_tensors="pt"
        ).to(device)
        text = blip.text_encoder(
            input_ids=tokens.input_ids,
            attention_mask=tokens.attention_mask,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=device),
        ).last_hidden_state
        rewards = head(text[:, 0, :].float()).squeeze(1)
        return (rewards - REWARD_MEAN) / REWARD_STD

    return imagereward
