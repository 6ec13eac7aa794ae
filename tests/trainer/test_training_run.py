"""Short in-process training runs of the tiny model: on-policy ratio, KL, CFG, resume, export."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.__main__ import main
from trainer.run import run

CONTRACT_KEYS = {
    "reward/mean",
    "reward/std",
    "reward/prompt_color_match",
    "loss",
    "kl",
    "clip_frac",
    "approx_kl",
    "ratio/mean",
    "grad_norm",
    "lr",
    "train/zero_std_frac",
    "time/rollout",
    "time/reward",
    "time/train",
    "time/sync",
    "time/step",
    "throughput/samples_per_s",
    "memory/peak_bytes",
}


def _run(tmp_path: Path, name: str, **overrides: object) -> list[dict[str, float]]:
    spec = tiny_spec(**overrides)
    out = tmp_path / name
    run(write_spec(tmp_path / f"{name}.json", spec), out, resume=False)
    return read_metrics(out)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"model": {"finetune": "full", "lora_rank": None}},
        {"algorithm": {"cfg_scale": 4.5, "kl_beta": 0.04}},
        {"model": {"finetune": "full", "lora_rank": None}, "algorithm": {"kl_beta": 0.04}},
    ],
    ids=["lora", "full", "lora-cfg-kl", "full-kl"],
)
def test_first_update_is_exactly_on_policy(tmp_path: Path, sfumato_home: Path, overrides: dict) -> None:
    algorithm = {"total_steps": 1, "sampling_steps": 4, **overrides.get("algorithm", {})}
    sections = {**overrides, "algorithm": algorithm, "samples": {"count": 0}, "checkpoint": {"every": 0}}
    (metrics,) = _run(tmp_path, "ratio", **sections)
    assert metrics["ratio/max_abs_dev"] == 0.0
    assert metrics["clip_frac"] == 0.0
    assert metrics["approx_kl"] == 0.0
    assert metrics["kl"] == 0.0  # the policy starts equal to its reference
    assert metrics.keys() >= CONTRACT_KEYS


def test_kl_grows_once_the_policy_moves(tmp_path: Path, sfumato_home: Path) -> None:
    metrics = _run(
        tmp_path,
        "kl",
        algorithm={"total_steps": 2, "sampling_steps": 4, "kl_beta": 0.04, "learning_rate": 0.01},
        samples={"count": 0},
        checkpoint={"every": 0},
    )
    assert metrics[0]["kl"] == 0.0 < metrics[1]["kl"]


def test_resume_continues_with_the_same_losses(tmp_path: Path, sfumato_home: Path) -> None:
    sections = {
        "algorithm": {"total_steps": 4, "sampling_steps": 4, "learning_rate": 0.01},
        "samples": {"count": 0},
        "checkpoint": {"every": 2},
    }
    spec_path = write_spec(tmp_path / "spec.json", tiny_spec(**sections))
    straight = tmp_path / "straight"
    run(spec_path, straight, resume=False)
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copytree(straight / "checkpoints" / "step-2", resumed / "checkpoints" / "step-2")
    run(spec_path, resumed, resume=True)
    expected, got = read_metrics(straight)[2:], read_metrics(resumed)
    assert [m["step"] for m in got] == [3, 4]
    for key in ("loss", "reward/mean", "grad_norm", "approx_kl"):
        assert [m[key] for m in got] == [m[key] for m in expected], key
    assert (resumed / "model" / "adapter_model.safetensors").exists()


def test_run_writes_checkpoints_eval_samples_and_the_final_model(tmp_path: Path, sfumato_home: Path) -> None:
    out = tmp_path / "out"
    spec = tiny_spec(
        algorithm={"total_steps": 2, "sampling_steps": 4}, samples={"every": 1, "count": 1}, checkpoint={"every": 1}
    )
    assert main(["run", "--spec", str(write_spec(tmp_path / "s.json", spec)), "--output-dir", str(out)]) == 0
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-1", "step-2"]
    assert len(list((out / "samples" / "step-2").glob("*.png"))) == 2
    from peft import PeftConfig

    assert PeftConfig.from_pretrained(out / "model").r == 4


def test_bad_spec_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tiny_spec(algorithm={"train_timesteps": 8})
    assert main(["run", "--spec", str(write_spec(tmp_path / "s.json", spec)), "--output-dir", str(tmp_path)]) == 2
    assert "algorithm.train_timesteps" in capsys.readouterr().err


def test_gradient_checkpointing_recomputes_blocks_and_keeps_the_loss(
    tmp_path: Path, sfumato_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch.utils.checkpoint

    calls = []
    original = torch.utils.checkpoint.checkpoint

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.utils.checkpoint, "checkpoint", counting)
    sections = {
        "algorithm": {"total_steps": 2, "sampling_steps": 4, "learning_rate": 0.01},
        "samples": {"count": 0},
        "checkpoint": {"every": 0},
    }
    plain = _run(tmp_path, "plain", **sections)
    assert not calls
    checkpointed = _run(tmp_path, "ckpt", model={"gradient_checkpointing": True}, **sections)
    assert calls
    for key in ("loss", "grad_norm", "reward/mean"):
        assert [m[key] for m in checkpointed] == pytest.approx([m[key] for m in plain], rel=1e-5, abs=1e-9), key


def test_bfloat16_transformer_trains_with_fp32_step_math(tmp_path: Path, sfumato_home: Path) -> None:
    metrics = _run(
        tmp_path,
        "bf16",
        model={"precision": "bf16"},
        algorithm={"total_steps": 2, "sampling_steps": 4},
        samples={"count": 0},
        checkpoint={"every": 0},
    )
    assert metrics[0]["ratio/max_abs_dev"] == 0.0
    assert all(math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"]) and m["grad_norm"] > 0 for m in metrics)


def test_rollout_images_are_posted_as_train_samples_with_their_rewards(
    tmp_path: Path, sfumato_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.reporting.reporter import Reporter

    posted: list[tuple[int, str, int, float | None]] = []

    def record(self: Reporter, step: int, kind: str, prompt: str, seed: int, reward: float | None, png: bytes) -> None:
        posted.append((step, kind, seed, reward))

    monkeypatch.setattr(Reporter, "sample", record)
    _run(
        tmp_path,
        "train",
        algorithm={"total_steps": 2, "sampling_steps": 4},
        samples={"every": 2, "count": 1},
        checkpoint={"every": 0},
    )
    train = [p for p in posted if p[1] == "train"]
    assert [(step, seed) for step, _, seed, _ in train] == [(2, 0), (2, 1), (2, 2), (2, 3)]
    assert all(reward is not None for *_, reward in train)
    assert len(list((tmp_path / "train" / "samples" / "step-2" / "train").glob("*.png"))) == 4
