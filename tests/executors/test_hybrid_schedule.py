"""The Lean executors' hybrid schedule (executor.after_first_update: native): with several optimizer steps
per rollout their graphs give the first update and native's re-forwards the rest, so the step is native's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import read_metrics, write_spec
from trainer.run import run

ALGORITHM = {"inner_epochs": 2, "total_steps": 2}


def train(tmp_path: Path, executor: dict[str, Any]) -> tuple[list[dict[str, float]], Path]:
    out = tmp_path / executor["name"]
    run(
        write_spec(tmp_path / f"{executor['name']}.json", audit_spec(algorithm=ALGORITHM, executor=executor)),
        out,
        False,
    )
    return read_metrics(out), out


def test_hybrid_lean_retain_takes_the_same_two_updates_a_step_as_native(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    from diffusers import SD3Transformer2DModel

    native, native_out = train(tmp_path, {"name": "native"})
    hybrid, hybrid_out = train(tmp_path, {"name": "lean_retain", "after_first_update": "native"})

    assert all(m["ratio/max_abs_dev"] > 0 for m in hybrid)  # the second update saw moved weights
    for key in ("loss", "grad_norm", "clip_frac", "reward/mean"):
        assert [m[key] for m in hybrid] == [m[key] for m in native], key
    native_model = SD3Transformer2DModel.from_pretrained(native_out / "model").state_dict()
    hybrid_model = SD3Transformer2DModel.from_pretrained(hybrid_out / "model").state_dict()
    for name, weight in native_model.items():
        assert torch.equal(hybrid_model[name], weight), name


def test_hybrid_lean_reweight_ends_its_step_with_native_s_weights(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Reweight's first update is native's up to rounding (E1), so the weights agree closely, not bitwise."""
    from diffusers import SD3Transformer2DModel

    native, native_out = train(tmp_path, {"name": "native"})
    hybrid, hybrid_out = train(tmp_path, {"name": "lean_reweight", "after_first_update": "native"})

    assert [m["grad_norm"] for m in hybrid] == pytest.approx([m["grad_norm"] for m in native], rel=1e-4)
    native_model = SD3Transformer2DModel.from_pretrained(native_out / "model").state_dict()
    hybrid_model = SD3Transformer2DModel.from_pretrained(hybrid_out / "model").state_dict()
    for name, weight in native_model.items():
        torch.testing.assert_close(hybrid_model[name], weight, atol=1e-6, rtol=0, msg=name)
