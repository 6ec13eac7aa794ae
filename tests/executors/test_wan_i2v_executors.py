"""Wan 2.1 image-to-video under the executors: the audit passes lean_retain (E0) and lean_reweight (E1) against
native on its tiny model with an edit set, a native step on the meta device mixes no devices, and under bf16 the
timestep reaches the transformer in fp32, unrounded, beside the row's image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from tests.executors.conftest import audit_spec
from tests.executors.test_meta_device_step import META, OneDevicePerOp, meta_job
from tests.trainer.conftest import EDIT_ROWS
from trainer.audit import audit
from trainer.edit_prompt import EditPrompt
from trainer.executors.registry import make_executor
from trainer.layout import step_batch
from trainer.models.loading import load_family
from trainer.models.tiny_wan_i2v import TINY_SIZE
from trainer.spec import ModelSpec, parse_spec

AUDITED = ["lean_retain", "lean_reweight"]


def model_section(wan_i2v_dir: Path, **options: Any) -> dict[str, Any]:
    height, width, frames = TINY_SIZE
    return {"family": "wan_i2v", "path": str(wan_i2v_dir), "resolution": [height, width], "num_frames": frames,
            **options}  # fmt: skip


def test_the_audit_passes_the_lean_executors_on_wan_i2v(tmp_path: Path, wan_i2v_dir: Path, edit_set_dir: Path) -> None:
    spec = audit_spec(model=model_section(wan_i2v_dir), prompts={"source": str(edit_set_dir)})
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    executors: dict[str, Any] = audit(path, AUDITED)["executors"]
    print("wan2.1-i2v", {name: (executors[name]["class"], executors[name]["verdict"]) for name in AUDITED})
    assert [executors[name]["class"] for name in AUDITED] == ["E0", "E1"]
    assert [executors[name]["verdict"] for name in AUDITED] == ["pass", "pass"]
    assert all(executors[name]["grad_norm"] > 0 for name in AUDITED)


def test_a_native_wan_i2v_step_on_the_meta_device_mixes_no_devices(wan_i2v_dir: Path, edit_set_dir: Path) -> None:
    spec = parse_spec(audit_spec(model=model_section(wan_i2v_dir), prompts={"source": str(edit_set_dir)},
                                 algorithm={"prompts_per_step": 2, "group_size": 2, "cfg_scale": 5.0}))  # fmt: skip
    job = meta_job(spec, "sharded")
    job.prompts = [EditPrompt(prompt, edit_set_dir / image) for prompt, image, _ in EDIT_ROWS]
    trainer = make_executor(spec.executor, job)
    algo = spec.algorithm
    batch = step_batch(job.prompts, 1, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
    with OneDevicePerOp() as check:
        metrics = trainer.train_step(batch).metrics
    assert check.mixed == [] and all(p.device == META for p in job.parameters)
    assert metrics.keys() >= {"loss", "grad_norm"}


def test_under_bf16_the_timestep_reaches_the_transformer_in_fp32_unrounded(
    wan_i2v_dir: Path, edit_set_dir: Path
) -> None:
    family = load_family(
        ModelSpec(**model_section(wan_i2v_dir, finetune="full", precision="bf16")), torch.device("cpu")
    )
    seen: list[dict[str, Any]] = []
    family.transformer.register_forward_pre_hook(lambda _m, _a, kwargs: seen.append(kwargs), with_kwargs=True)
    sigma = family.sigmas(10)[1:3].float()
    cond = family.encode_prompts([EditPrompt(prompt, edit_set_dir / image) for prompt, image, _ in EDIT_ROWS[:2]])
    velocity = family.velocity(family.transformer, torch.randn(2, *family.latent_shape), sigma, cond, None, 1.0)
    assert seen[0]["timestep"].dtype == torch.float32 and torch.equal(seen[0]["timestep"], sigma * 1000)
    assert not torch.equal((sigma * 1000).bfloat16().float(), sigma * 1000)  # what rounding to bf16 would pass
    assert velocity.dtype == torch.float32 and velocity.shape == (2, *family.latent_shape)
