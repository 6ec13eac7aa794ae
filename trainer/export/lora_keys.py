"""A trained LoRA's tensors under the names diffusers and ComfyUI load.

diffusers: each pipeline's ``save_lora_weights`` writes ``transformer.<module>.lora_A.weight`` / ``lora_B.weight``
(huggingface/diffusers, loaders/lora_pipeline.py), with PEFT's rank and alpha in the file's metadata.
ComfyUI: ``model_lora_keys_unet`` maps ``lora_transformer_<module with . as _>`` to SD3's and FLUX's weights, and
``load_lora`` reads ``.lora_down.weight`` (A), ``.lora_up.weight`` (B) and ``.alpha`` under it, scaling by
alpha / rank as PEFT does (comfyanonymous/ComfyUI, comfy/lora.py).
"""

from __future__ import annotations

import torch
from torch import nn

PEFT_PREFIX = "base_model.model."
COMFYUI_PREFIX = "lora_transformer_"


def diffusers_lora_layers(transformer: nn.Module) -> dict[str, torch.Tensor]:
    """``<module>.lora_A.weight`` / ``.lora_B.weight`` of the adapter, named as in the bare transformer."""
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(transformer)
    return {key.removeprefix(PEFT_PREFIX): value.detach().contiguous() for key, value in state.items()}


def comfyui_lora_state(transformer: nn.Module) -> dict[str, torch.Tensor]:
    """Every adapted module as ComfyUI's ``lora_transformer_`` entry: down (A), up (B) and alpha."""
    alpha = float(transformer.peft_config["default"].lora_alpha)  # type: ignore[union-attr,index]
    names = {"lora_A.weight": "lora_down.weight", "lora_B.weight": "lora_up.weight"}
    state: dict[str, torch.Tensor] = {}
    for key, value in diffusers_lora_layers(transformer).items():
        module, part = key.rsplit(".", 2)[0], ".".join(key.rsplit(".", 2)[1:])
        name = COMFYUI_PREFIX + module.replace(".", "_")
        state[f"{name}.{names[part]}"] = value
        state[f"{name}.alpha"] = torch.tensor(alpha)
    return state
