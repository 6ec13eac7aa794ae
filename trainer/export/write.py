"""``python -m trainer export``: one checkpoint written in one format (docs/exports.md).

- ``diffusers``: a LoRA as ``pytorch_lora_weights.safetensors`` through the family pipeline's own
  ``save_lora_weights`` (what its ``load_lora_weights`` reads); a full fine-tune as ``transformer/``.
- ``comfyui``: ``comfyui_lora.safetensors`` in ComfyUI's ``lora_transformer_`` names.
- ``merged``: ``transformer/``, the base weights with scale·B·A added (PEFT's ``merge_and_unload``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from safetensors.torch import save_file

from trainer.export.lora_keys import comfyui_lora_state, diffusers_lora_layers
from trainer.export.trained_model import trained_family
from trainer.spec import JobSpec
from trainer.spec.export_formats import check_export_format

PIPELINES = {
    "sd3": "StableDiffusion3Pipeline",
    "flux": "FluxPipeline",
    "flux_kontext": "FluxKontextPipeline",
    "wan": "WanPipeline",
    "wan_i2v": "WanImageToVideoPipeline",
    "qwen_image": "QwenImagePipeline",
    "qwen_image_edit": "QwenImageEditPipeline",
}
COMFYUI_FILE = "comfyui_lora.safetensors"


def export(spec: JobSpec, checkpoint: Path, name: str, out: Path) -> Path:
    """Write ``checkpoint`` of the job ``spec`` as format ``name`` into ``out`` (replaced); return the file or
    folder another tool loads."""
    model = spec.model
    check_export_format(name, model.family, model.finetune)
    transformer = trained_family(spec, checkpoint).transformer
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if name == "comfyui":
        save_file(comfyui_lora_state(transformer), str(out / COMFYUI_FILE))
        return out / COMFYUI_FILE
    if name == "merged":
        transformer = transformer.merge_and_unload()  # type: ignore[operator]
    if name == "merged" or model.finetune == "full":
        transformer.save_pretrained(out / "transformer")  # type: ignore[operator]
        return out / "transformer"
    import diffusers

    pipeline = getattr(diffusers, PIPELINES[model.family])
    config = transformer.peft_config["default"]  # type: ignore[index]
    metadata = {"r": config.r, "lora_alpha": config.lora_alpha, "target_modules": sorted(config.target_modules)}
    pipeline.save_lora_weights(
        out, transformer_lora_layers=diffusers_lora_layers(transformer), transformer_lora_adapter_metadata=metadata
    )
    return out
