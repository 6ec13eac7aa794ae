"""``model.text_encoders`` (issue 27 item 4): 'gpu' keeps the frozen encoders on the job's device; 'cpu' and 'free'
encode the whole prompt set once, keep the embeddings in host memory and move the encoders to the CPU or drop
them. 'free' refuses a prompt set whose embeddings would not all be cached, naming both fields. The VAE is held
in the compute precision."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from trainer.job import TrainingJob
from trainer.models.loading import load_family
from trainer.spec import SpecError, parse_spec
from trainer.spec.job import spec_errors
from trainer.spec.prompt_cache import MAX_CACHED_PROMPTS


def built(sfumato_home: Path, text_encoders: str) -> TrainingJob:
    spec = parse_spec(tiny_spec(model={"text_encoders": text_encoders}, samples={"count": 0}))
    return TrainingJob.build(spec, "sharded")


def test_free_drops_the_encoders_and_keeps_the_embeddings_gpu_mode_encodes(sfumato_home: Path) -> None:
    kept, freed = built(sfumato_home, "gpu"), built(sfumato_home, "free")
    assert kept.family.text_encoders() and not freed.family.text_encoders()
    prompts = [kept.prompts[0], kept.spec.prompts.eval[0]]
    assert torch.equal(freed.conditioning(prompts).hidden, kept.conditioning(prompts).hidden)


def test_free_refuses_a_prompt_outside_its_encoded_set(sfumato_home: Path) -> None:
    job = built(sfumato_home, "free")
    with pytest.raises(SpecError) as refused:
        job.conditioning(["a prompt the set does not hold"])
    assert refused.value.field == "model.text_encoders"


def test_cpu_moves_the_encoders_to_the_host_where_a_new_prompt_is_encoded(sfumato_home: Path) -> None:
    job = built(sfumato_home, "cpu")
    assert job.family.encoder_device == torch.device("cpu")
    assert all(p.device.type == "cpu" for module in job.family.text_encoders() for p in module.parameters())
    assert job.conditioning(["a prompt the set does not hold"]).hidden.shape[0] == 1


def test_free_with_more_prompts_than_the_cache_holds_is_refused_naming_both_fields(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("".join(f"prompt {n}\n" for n in range(MAX_CACHED_PROMPTS + 1)))
    data = tiny_spec(model={"text_encoders": "free"}, prompts={"source": str(prompts)})
    with pytest.raises(ValidationError) as refused:
        parse_spec(data)
    (error,) = spec_errors(refused.value)
    assert error["field"] == "model.text_encoders" and "prompts.source" in error["message"]
    parse_spec({**data, "model": {**data["model"], "text_encoders": "cpu"}})


def test_the_vae_is_held_in_the_compute_precision_and_decodes_to_fp32(sfumato_home: Path) -> None:
    spec = parse_spec(tiny_spec(model={"precision": "bf16"}))
    family = load_family(spec.model, torch.device("cpu"))
    assert next(family.vae.parameters()).dtype == torch.bfloat16
    images = family.decode(torch.randn(1, *family.latent_shape))
    assert images.dtype == torch.float32
