"""The job's transformer with a checkpoint's trained weights, in fp32, for an export (on the CPU) or a playground."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from trainer.checkpoint import WEIGHTS
from trainer.models.base import ModelFamily
from trainer.models.loading import load_family
from trainer.spec import JobSpec, SpecError

PEFT_WEIGHTS = "adapter_model.safetensors"  # the job's model/ folder under LoRA (PEFT's save_pretrained)
DIFFUSERS_CONFIG = "config.json"  # the job's model/ folder under full fine-tuning (diffusers' save_pretrained)
CPU = torch.device("cpu")


def base_family(spec: JobSpec, device: torch.device = CPU) -> ModelFamily:
    """The spec's model (LoRA-wrapped as in training, the adapter untrained) held in fp32 on ``device``."""
    model = spec.model.model_copy(update={"precision": "fp32", "gradient_checkpointing": False})
    return load_family(model, device)


def trained_family(spec: JobSpec, checkpoint: Path, device: torch.device = CPU) -> ModelFamily:
    """The spec's model (LoRA-wrapped as in training) held in fp32 on ``device``, its trainable weights read from
    ``checkpoint``: a ``checkpoints/step-N`` folder or the job's final ``model/`` folder."""
    family = base_family(spec, device)
    if (checkpoint / WEIGHTS).is_file():
        parameters = dict(family.transformer.named_parameters())
        unknown = sorted(set(load_file(str(checkpoint / WEIGHTS))) - set(parameters))
        if unknown:
            raise SpecError("checkpoint", f"{checkpoint} holds weights this spec's model lacks, e.g. {unknown[0]}")
        with torch.no_grad():
            for name, value in load_file(str(checkpoint / WEIGHTS)).items():
                parameters[name].copy_(value)
    elif (checkpoint / PEFT_WEIGHTS).is_file() and spec.model.finetune == "lora":
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(family.transformer, load_file(str(checkpoint / PEFT_WEIGHTS)))
    elif (checkpoint / DIFFUSERS_CONFIG).is_file() and spec.model.finetune == "full":
        transformer = type(family.transformer).from_pretrained(checkpoint, torch_dtype=torch.float32)
        family.transformer = transformer.to(device)
    else:
        message = f"{checkpoint} is neither a checkpoints/step-N folder nor this {spec.model.finetune} job's model/"
        raise SpecError("checkpoint", message)
    family.transformer.eval()
    return family
