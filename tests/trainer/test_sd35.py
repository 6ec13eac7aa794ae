"""SD3.5 Medium and Large under ``model.family: sd3``: their transformer configs (qk norm, Medium's dual
attention) load through the SD3 family, take flow_grpo's LoRA targets, sample on their pipeline's grid and
train."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import read_metrics, write_spec
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid, pipeline_for
from trainer.algorithms.registry import ALGORITHM_CLASSES
from trainer.models.sd3 import SD3_LORA_TARGETS, SD35_LORA_TARGETS
from trainer.run import run
from trainer.spec import ModelSpec

VARIANTS = ["medium", "large"]


def load(path: Path, finetune: str = "lora") -> object:
    from trainer.models.loading import load_family

    return load_family(ModelSpec(family="sd3", path=str(path), finetune=finetune), torch.device("cpu"))


def test_sd35_medium_has_qk_norm_and_a_dual_attention_block_and_large_has_qk_norm_alone(
    sd35_dirs: dict[str, Path],
) -> None:
    medium, large = (load(sd35_dirs[v], "full").transformer for v in VARIANTS)  # type: ignore[attr-defined]
    assert medium.transformer_blocks[0].attn.norm_q is not None and large.transformer_blocks[0].attn.norm_q is not None
    assert medium.transformer_blocks[0].attn2 is not None
    assert all(block.attn2 is None for block in large.transformer_blocks)


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_sd35_lora_wraps_flow_grpos_targets_where_sd3_keeps_its_own(
    sd35_dirs: dict[str, Path], tiny_family_dirs: dict[str, Path], variant: str
) -> None:
    family = load(sd35_dirs[variant])
    assert family.lora_targets == SD35_LORA_TARGETS  # type: ignore[attr-defined]
    wrapped = {n for n, m in family.transformer.named_modules() if hasattr(m, "lora_A")}  # type: ignore[attr-defined]
    assert "base_model.model.transformer_blocks.0.attn.add_q_proj" in wrapped
    assert load(tiny_family_dirs["sd3"]).lora_targets == SD3_LORA_TARGETS  # type: ignore[attr-defined]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_sd35_grid_is_the_one_its_diffusers_pipeline_sets(sd35_dirs: dict[str, Path], variant: str) -> None:
    steps = 6
    ours = load(sd35_dirs[variant], "full")
    pipe, inputs = pipeline_for("sd3", ours)
    pipe(**inputs, num_inference_steps=steps, guidance_scale=1.0, output_type="latent")  # type: ignore[operator]
    assert_same_grid(ours.sigmas(steps), pipe.scheduler.sigmas)  # type: ignore[attr-defined]


@pytest.mark.parametrize("algorithm", list(ALGORITHM_CLASSES))
def test_every_algorithm_trains_two_steps_on_sd35_medium(
    tmp_path: Path, sd35_dirs: dict[str, Path], algorithm: str
) -> None:
    spec = algorithm_spec(algorithm, {"family": "sd3", "path": str(sd35_dirs["medium"])}, steps=2)
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)


def test_sd35_large_trains_two_flow_grpo_steps(tmp_path: Path, sd35_dirs: dict[str, Path]) -> None:
    spec = algorithm_spec("flow_grpo", {"family": "sd3", "path": str(sd35_dirs["large"])}, steps=2)
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    assert [m["step"] for m in read_metrics(tmp_path / "out")] == [1, 2]
