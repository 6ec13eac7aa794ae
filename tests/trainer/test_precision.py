"""``model.precision``: fp32 weights and optimizer state, compute in bf16/fp16 under autocast, fp32 timesteps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec, torchrun
from tests.trainer.conftest import read_metrics, write_spec
from trainer.job import TrainingJob
from trainer.models.loading import load_family
from trainer.run import run
from trainer.spec import EXECUTORS, ModelSpec, parse_spec

BF16_HALF_GAP = 2**-9  # bf16 keeps 8 significant bits: half its gap at |w| is at least |w| · 2⁻⁹


def test_full_finetuning_keeps_fp32_master_weights_that_take_updates_below_bf16s_resolution(
    sfumato_home: Path,
) -> None:
    spec = parse_spec(audit_spec(model={"precision": "bf16"}, algorithm={"learning_rate": 1e-5}))
    job = TrainingJob.build(spec, "sharded")
    before = [p.detach().clone() for p in job.parameters]
    assert {p.dtype for p in job.parameters} == {torch.float32}
    for param in job.parameters:
        param.grad = torch.full_like(param, 1e-3)
    job.optimizer_step()
    assert {s.dtype for state in job.optimizer.state.values() for s in state.values() if s.dim()} == {torch.float32}
    old = torch.cat([p.reshape(-1) for p in before])
    new = torch.cat([p.detach().reshape(-1) for p in job.parameters])
    step = (new - old).abs()
    below_bf16 = step < old.abs() * BF16_HALF_GAP  # bf16 would round the weight back: the update lost
    assert below_bf16.sum() > 0.5 * old.numel() and bool((step[below_bf16] > 0).all())


def test_a_lora_adapter_trains_in_fp32_over_base_weights_held_in_bf16(tiny_model_dir: Path) -> None:
    family = load_family(ModelSpec(precision="bf16"), torch.device("cpu"))
    trained = {p.dtype for p in family.transformer.parameters() if p.requires_grad}
    frozen = {p.dtype for p in family.transformer.parameters() if not p.requires_grad}
    assert (trained, frozen, family.compute_dtype) == ({torch.float32}, {torch.bfloat16}, torch.bfloat16)


@pytest.mark.parametrize("name", ["sd3", "flux", "wan", "qwen_image"])
def test_timesteps_reach_the_transformer_in_fp32_unrounded(tiny_family_dirs: dict[str, Path], name: str) -> None:
    """The pipelines' t = 1000σ (FLUX and Qwen-Image: σ itself, their t / 1000) in fp32, never rounded to the compute
    precision."""
    family = load_family(ModelSpec(family=name, finetune="full", precision="bf16"), torch.device("cpu"))
    seen: list[torch.Tensor] = []
    family.transformer.register_forward_pre_hook(
        lambda _module, _args, kwargs: seen.append(kwargs["timestep"]), with_kwargs=True
    )
    sigma = family.sigmas(10)[1:3].float()
    cond = family.encode_prompts(["a red apple", "a blue car"])
    velocity = family.velocity(family.transformer, torch.randn(2, *family.latent_shape), sigma, cond, None, 1.0)
    expected = sigma if name in ("flux", "qwen_image") else sigma * 1000
    assert seen[0].dtype == torch.float32 and torch.equal(seen[0], expected)
    assert not torch.equal(expected.bfloat16().float(), expected)  # what rounding to bf16 would have passed
    assert velocity.dtype == torch.float32


def bf16_spec(executor: str) -> dict[str, Any]:
    options: dict[str, Any] = {"name": executor}
    resources = {"devices": 1}
    if executor.startswith("jagg"):  # jagg and its compositions with Lean: K = 3 holds one group of 2
        options["group_width"] = 2
    if executor == "digenrl":
        resources = {"devices": 2}
    return audit_spec(model={"precision": "bf16"}, executor=options, resources=resources)


@pytest.mark.parametrize("executor", [name for name in EXECUTORS if name != "digenrl"])
def test_every_executor_completes_a_bf16_step_on_cpu(tmp_path: Path, sfumato_home: Path, executor: str) -> None:
    run(write_spec(tmp_path / "spec.json", bf16_spec(executor)), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert torch.isfinite(torch.tensor([metrics["loss"], metrics["grad_norm"]])).all() and metrics["grad_norm"] > 0


@pytest.mark.slow
def test_digenrl_completes_a_bf16_step_on_two_cpu_ranks(tmp_path: Path, sfumato_home: Path) -> None:
    result = torchrun(tmp_path, sfumato_home, bf16_spec("digenrl"), "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["grad_norm"] > 0


def test_native_completes_an_fp16_step_with_its_loss_scaled(tmp_path: Path, sfumato_home: Path) -> None:
    spec = audit_spec(model={"precision": "fp16"})
    job = TrainingJob.build(parse_spec(spec), "sharded")
    assert job.loss_scaler.is_enabled()
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert torch.isfinite(torch.tensor([metrics["loss"], metrics["grad_norm"]])).all() and metrics["grad_norm"] > 0


@pytest.mark.slow
def test_full_finetuning_under_fsdp_completes_a_bf16_step_on_policy(tmp_path: Path, sfumato_home: Path) -> None:
    """FSDP2's mixed-precision policy: units gathered in bf16, gradients reduced in fp32, inputs uncast."""
    spec = audit_spec(model={"precision": "bf16", "sharding": "fsdp"}, resources={"devices": 2})
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["sharding/fsdp"] == 1.0 and metrics["ratio/max_abs_dev"] == 0.0 and metrics["grad_norm"] > 0
