"""The forward family's copies of the weights (the old policy; AWM's EMA) are checkpointed: a run interrupted and
resumed from its checkpoint holds, at the next checkpoint, bit for bit the copies and weights of a run that was
never interrupted. A checkpoint without the copies (one written before they were saved) restarts them from its
weights and says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.checkpoint import COPIES, WEIGHTS
from trainer.run import run
from trainer.spec.forward_family import FORWARD_ALGORITHMS

STEPS, EVERY = 4, 2


def forward_spec(algorithm: str) -> dict:
    spec = tiny_spec(
        algorithm={"name": algorithm, "total_steps": STEPS, "sampling_steps": 4, "learning_rate": 0.01},
        samples={"count": 0},
        checkpoint={"every": EVERY},
    )
    for grpo_option in ("noise_level", "clip_range"):
        del spec["algorithm"][grpo_option]
    return spec


def straight_and_resumed(tmp_path: Path, algorithm: str, keep_copies: bool = True) -> tuple[Path, Path]:
    spec = write_spec(tmp_path / "spec.json", forward_spec(algorithm))
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run(spec, straight, resume=False)
    shutil.copytree(straight / "checkpoints" / f"step-{EVERY}", resumed / "checkpoints" / f"step-{EVERY}")
    if not keep_copies:
        (resumed / "checkpoints" / f"step-{EVERY}" / COPIES).unlink()
    run(spec, resumed, resume=True)
    return straight / "checkpoints" / f"step-{STEPS}", resumed / "checkpoints" / f"step-{STEPS}"


@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
def test_a_resumed_run_holds_the_same_old_policy_as_an_uninterrupted_one(
    tmp_path: Path, sfumato_home: Path, algorithm: str
) -> None:
    straight, resumed = straight_and_resumed(tmp_path, algorithm)
    expected, got = load_file(str(straight / COPIES)), load_file(str(resumed / COPIES))
    kinds = {key.split(".")[0] for key in expected}
    assert kinds == ({"old", "ema"} if algorithm == "awm" else {"old"})
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[key], got[key]) for key in expected)
    weights, resumed_weights = load_file(str(straight / WEIGHTS)), load_file(str(resumed / WEIGHTS))
    assert all(torch.equal(weights[name], resumed_weights[name]) for name in weights)
    losses = [(m["loss"], m["reward/mean"], m["kl"]) for m in read_metrics(straight.parents[1])[EVERY:]]
    assert losses == [(m["loss"], m["reward/mean"], m["kl"]) for m in read_metrics(resumed.parents[1])]


def test_a_checkpoint_without_the_copies_restarts_them_from_its_weights_and_says_so(
    tmp_path: Path, sfumato_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    straight_and_resumed(tmp_path, "diffusion_nft", keep_copies=False)
    assert "holds no old policy copy (an older checkpoint): it restarts from the checkpoint's weights" in (
        capsys.readouterr().out
    )
