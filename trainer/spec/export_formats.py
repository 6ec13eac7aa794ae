"""Which export formats each family and fine-tune mode has (torch-free: the server refuses with it too).

``diffusers`` exists for every family: a LoRA for the family pipeline's ``load_lora_weights``, a full fine-tune
as a ``transformer/`` folder. ``merged`` folds a LoRA into the base weights, so a full fine-tune has none.
``comfyui`` is a LoRA in the key names ComfyUI's ``model_lora_keys_unet`` maps, which name SD3's and FLUX's
diffusers modules (comfyanonymous/ComfyUI, comfy/lora.py) and not Wan's.
"""

from __future__ import annotations

from trainer.spec.base import SpecError

EXPORT_FORMATS = ("diffusers", "comfyui", "merged")
COMFYUI_FAMILIES = ("sd3", "flux")


def export_formats(family: str, finetune: str) -> tuple[str, ...]:
    if finetune == "full":
        return ("diffusers",)
    return ("diffusers", *(("comfyui",) if family in COMFYUI_FAMILIES else ()), "merged")


def check_export_format(name: str, family: str, finetune: str) -> None:
    """Raise the SpecError naming ``format`` when this job's model has no such export."""
    allowed = export_formats(family, finetune)
    if name not in allowed:
        known = "" if name in EXPORT_FORMATS else f" (formats: {', '.join(EXPORT_FORMATS)})"
        message = f"{name!r} is not an export of a {family} {finetune} fine-tune{known}; it has {', '.join(allowed)}"
        raise SpecError("format", message)
