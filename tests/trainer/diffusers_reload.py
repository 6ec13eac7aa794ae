"""A plain diffusers SD3 run, outside the trainer: ``python diffusers_reload.py BASE LORA INPUTS OUTPUT``.

StableDiffusion3Pipeline is assembled from the tiny base's folders, each through ``from_pretrained``, the exported
LoRA is loaded with ``load_lora_weights``, and the pipeline's own ``__call__`` makes the images (``output_type``
'pt', in [0, 1]) from the given prompts, initial latents, step count, guidance and T5 length.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3Pipeline
from transformers import AutoTokenizer, CLIPTextModelWithProjection, T5EncoderModel


def main(base: Path, lora: Path, inputs: Path, output: Path) -> None:
    pipe = StableDiffusion3Pipeline(
        transformer=SD3Transformer2DModel.from_pretrained(base / "transformer"),
        scheduler=FlowMatchEulerDiscreteScheduler.from_pretrained(base / "scheduler"),
        vae=AutoencoderKL.from_pretrained(base / "vae"),
        text_encoder=CLIPTextModelWithProjection.from_pretrained(base / "text_encoder"),
        tokenizer=AutoTokenizer.from_pretrained(base / "tokenizer"),
        text_encoder_2=CLIPTextModelWithProjection.from_pretrained(base / "text_encoder_2"),
        tokenizer_2=AutoTokenizer.from_pretrained(base / "tokenizer_2"),
        text_encoder_3=T5EncoderModel.from_pretrained(base / "text_encoder_3"),
        tokenizer_3=AutoTokenizer.from_pretrained(base / "tokenizer_3"),
    )
    pipe.load_lora_weights(lora)
    given = torch.load(inputs)
    images = pipe(
        prompt=given["prompts"], latents=given["latents"], num_inference_steps=given["steps"],
        guidance_scale=given["guidance"], max_sequence_length=given["t5_sequence"],
        height=given["height"], width=given["width"], output_type="pt",
    ).images  # fmt: skip
    torch.save(images, output)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(*(Path(arg) for arg in sys.argv[1:5]))
