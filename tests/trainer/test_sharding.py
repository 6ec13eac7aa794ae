"""DDP or FSDP: which one a job runs, FSDP full fine-tuning trains as DDP does, and resumes from its checkpoints
as if never stopped (FSDP2 on gloo)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.trainer.conftest import read_metrics, tiny_spec, torchrun
from trainer.spec import parse_spec


def sharding_of(world_size: int, **sections: Any) -> str:
    from trainer.sharding import choose_sharding

    return choose_sharding(parse_spec(tiny_spec(**sections)), world_size).strategy


FULL = {"finetune": "full", "lora_rank": None}
CUDA = {"devices": 2, "device_type": "cuda"}
LR = 0.01


@pytest.mark.parametrize(
    ("sections", "strategy"),
    [
        ({"model": FULL, "resources": CUDA}, "fsdp"),
        ({"resources": CUDA}, "ddp"),
        ({"model": FULL, "resources": {"devices": 2}}, "ddp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "lean_retain"}}, "fsdp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "lean_reweight"}}, "fsdp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "jagg"}}, "fsdp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "jagg_retain"}}, "fsdp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "jagg_reweight"}}, "fsdp"),
        ({"model": FULL, "resources": CUDA, "executor": {"name": "digenrl"}}, "ddp"),
        ({"model": {**FULL, "sharding": "ddp"}, "resources": CUDA}, "ddp"),
        ({"model": {**FULL, "sharding": "fsdp"}, "resources": {"devices": 2}}, "fsdp"),
    ],
    ids=[
        "full-cuda",
        "lora-cuda",
        "full-cpu",
        "full-cuda-retain",
        "full-cuda-reweight",
        "full-cuda-jagg",
        "full-cuda-jagg-retain",
        "full-cuda-jagg-reweight",
        "full-cuda-digenrl",
        "forced-ddp",
        "forced-fsdp-cpu",
    ],
)
def test_auto_takes_fsdp_for_full_fine_tuning_on_cuda_with_native_lean_and_jagg(sections: dict, strategy: str) -> None:
    assert sharding_of(2, **sections) == strategy


def test_one_rank_shards_nothing() -> None:
    assert sharding_of(1, model=FULL, resources={"device_type": "cuda"}) == "single"


def torchrun_full(
    tmp_path: Path, sfumato_home: Path, sharding: str, steps: int = 2, every: int = 0, out: Path | None = None
) -> tuple[str, Path]:
    spec = tiny_spec(
        model={**FULL, "sharding": sharding},
        algorithm={"total_steps": steps, "sampling_steps": 3, "group_size": 2, "learning_rate": LR, "kl_beta": 0.04},
        resources={"devices": 2},
        samples={"count": 0},
        checkpoint={"every": every},
    )
    out = out or tmp_path / sharding
    resume = ["--resume"] if out.exists() else []
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(out), *resume)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, out


@pytest.mark.slow
def test_fsdp_full_fine_tuning_matches_ddp_and_exports_an_unsharded_model(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    import torch
    from diffusers import SD3Transformer2DModel

    ddp_log, ddp = torchrun_full(tmp_path, sfumato_home, "ddp")
    fsdp_log, fsdp = torchrun_full(tmp_path, sfumato_home, "fsdp")
    assert "sharding ddp" in ddp_log and "sharding fsdp" in fsdp_log
    ddp_metrics, fsdp_metrics = read_metrics(ddp), read_metrics(fsdp)
    assert [m["sharding/fsdp"] for m in fsdp_metrics] == [1.0, 1.0]
    for expected, got in zip(ddp_metrics, fsdp_metrics, strict=True):
        for key in ("loss", "kl", "grad_norm", "reward/mean"):
            assert got[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-9), key
    ddp_model = SD3Transformer2DModel.from_pretrained(ddp / "model")
    fsdp_model = SD3Transformer2DModel.from_pretrained(fsdp / "model")
    original = SD3Transformer2DModel.from_pretrained(tiny_model_dir / "transformer")
    moved = [(p - o).abs().max() for p, o in zip(fsdp_model.parameters(), original.parameters(), strict=True)]
    assert max(moved) > 1e-4  # two steps at lr 1e-2 moved the weights
    pairs = zip(ddp_model.state_dict().values(), fsdp_model.state_dict().values(), strict=True)
    differences = torch.cat([(b - a).abs().reshape(-1) for a, b in pairs])
    assert float(differences.max()) <= summation_order_bound([m["grad_norm"] for m in ddp_metrics])
    assert float(torch.quantile(differences, 0.99)) <= 1e-3 * LR


def summation_order_bound(grad_norms: list[float]) -> float:
    """How far FSDP's weights may lie from DDP's when the two differ only in the order they sum in fp32 (class E1).

    FSDP and DDP form each gradient component with the same terms summed in another order, so the two differ
    by rounding at the scale of the gradient's largest components: δ ≤ u·‖g‖₂ with u = 2⁻²⁴ the fp32 unit
    roundoff (‖g‖₂ ≥ max|gᵢ|; measured here δ is at most u·max|gᵢ|, half an ulp of the largest component).
    AdamW turns a gradient component into a direction m̂/(√v̂ + ε): at the first step g/(|g| + ε), whose slope
    is at most 1/ε where g is near 0, and at most about 2/ε at the second. So a step can move a weight's
    difference by at most 2·lr·δ/ε, and the bound is their sum over the steps, ‖g‖ the clipped norm each step
    fed AdamW. Weight decay (lr·10⁻⁴ of the difference) and the second step's gradient at slightly different
    weights are orders below it. With this run's norms (about 0.05 and 0.01) it is about 7.6e-3, a fraction
    of lr where the old bound (2·lr a step, what AdamW can move anyway) could not fail; a gradient with a
    wrong direction moves weights by about lr."""
    u, epsilon, max_grad_norm = 2.0**-24, 1e-8, 1.0
    return sum(2 * LR * u * min(norm, max_grad_norm) / epsilon for norm in grad_norms)


@pytest.mark.slow
def test_fsdp_resumes_from_its_checkpoint_with_the_same_losses_and_weights(tmp_path: Path, sfumato_home: Path) -> None:
    import torch
    from diffusers import SD3Transformer2DModel

    _, straight = torchrun_full(tmp_path, sfumato_home, "fsdp", steps=4, every=2)
    resumed = tmp_path / "resumed"
    shutil.copytree(straight / "checkpoints" / "step-2", resumed / "checkpoints" / "step-2")
    log, _ = torchrun_full(tmp_path, sfumato_home, "fsdp", steps=4, every=2, out=resumed)

    assert "resumed from" in log
    expected, got = read_metrics(straight)[2:], read_metrics(resumed)
    assert [m["step"] for m in got] == [3, 4]
    for key in ("loss", "kl", "grad_norm", "reward/mean"):
        assert [m[key] for m in got] == pytest.approx([m[key] for m in expected], rel=1e-6, abs=1e-12), key
    straight_model = SD3Transformer2DModel.from_pretrained(straight / "model")
    resumed_model = SD3Transformer2DModel.from_pretrained(resumed / "model")
    for (name, a), b in zip(straight_model.state_dict().items(), resumed_model.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a, atol=1e-6, rtol=0, msg=name)
