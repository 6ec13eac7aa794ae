"""Issue 3's bad input: each case is refused with an error naming the field, before a model loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec, write_spec
from trainer.__main__ import main
from trainer.spec import parse_spec, spec_errors

FULL = {"finetune": "full", "lora_rank": None}
CUDA_PAIR = {"devices": 2, "device_type": "cuda"}


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"algorithm": {"name": "dance_grpo", "window_size": 2}}, "algorithm.window_size"),
        ({"algorithm": {"name": "flow_grpo", "candidate_steps": 2}}, "algorithm.candidate_steps"),
        ({"reward": [{"name": "clip_score", "path": "/no/such/clip"}]}, "reward.0.path"),
        ({"model": {"family": "flux", "path": "/no/such/model"}}, "model.path"),
        ({"model": {**FULL, "lora_rank": 8}}, "model.lora_rank"),
        ({"algorithm": {"sampling_steps": 6, "train_timesteps": 6}}, "algorithm.train_timesteps"),
        ({"model": {"sharding": "fsdp"}, "resources": CUDA_PAIR}, "model.sharding"),
        ({"model": {**FULL, "sharding": "fsdp"}}, "model.sharding"),
        ({"model": {**FULL, "sharding": "fsdp"}, "resources": CUDA_PAIR, "executor": {"name": "digenrl"}},
         "model.sharding"),
        ({"algorithm": {"rollout_chunks": 2}, "executor": {"name": "jagg"}}, "algorithm.rollout_chunks"),
        ({"model": {"family": "sd3", "num_frames": 5}}, "model.num_frames"),
        ({"model": {"family": "wan", "num_frames": 8}}, "model.num_frames"),
        ({"model": {"family": "wan", "resolution": [40, 32]}}, "model.resolution"),
        ({"model": {"family": "flux", "resolution": [512, 4096]}}, "model.resolution"),
        ({"model": {"family": "wan", "height": 40}}, "model.resolution"),
        ({"model": {"family": "sd3", "height": 64}}, "model.height"),
        ({"model": {"family": "flux", "precision": "fp16"}}, "model.precision"),
        ({"model": {"family": "wan", "precision": "fp16"}}, "model.precision"),
        ({"model": {"precision": "fp16"}, "executor": {"name": "lean_retain"}}, "model.precision"),
    ],
    ids=[
        "option-of-another-algorithm", "flash-option-for-flow-grpo", "missing-reward-path", "missing-model-path",
        "lora-rank-with-full", "train-timesteps-not-below-steps", "fsdp-with-lora", "fsdp-on-one-device",
        "fsdp-with-digenrl", "chunks-with-jagg", "frames-for-an-image-family", "frames-not-4k-plus-1",
        "resolution-not-multiple-of-16", "resolution-over-the-family-maximum", "stored-wan-height-not-multiple",
        "height-for-an-image-family", "fp16-for-flux", "fp16-for-wan", "fp16-with-a-lean-executor",
    ],
)  # fmt: skip
def test_bad_spec_is_refused_naming_the_field(sections: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(**sections))
    assert field in [problem["field"] for problem in spec_errors(error.value)]


def test_a_reward_that_does_not_load_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "clip").mkdir()
    spec = tiny_spec(reward=[{"name": "clip_score", "path": str(tmp_path / "clip")}])
    assert main(["run", "--spec", str(write_spec(tmp_path / "spec.json", spec)), "--output-dir", str(tmp_path)]) == 2
    assert "spec error: reward.path:" in capsys.readouterr().err
