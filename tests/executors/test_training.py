"""Every executor trains under torchrun with two gloo ranks and reports its ``executor/*``
metrics; lean_retain's memory guard falls back before exceeding its graph budget."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec, torchrun
from tests.trainer.conftest import read_metrics, write_spec
from trainer.executors.units import unit_size
from trainer.models.builtin_tiny import LATENT_SIZE
from trainer.models.tiny_vae import LATENT_CHANNELS
from trainer.run import run

EXECUTOR_KEYS = {"executor/retained_graphs", "executor/buffer_bytes", "executor/sync_count"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "executor",
    [
        {"name": "lean_retain"},
        {"name": "lean_reweight"},
        {"name": "jagg", "group_width": 2},
    ],
    ids=lambda e: e["name"],
)
def test_executor_trains_two_steps_on_two_gloo_ranks(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, executor: dict[str, Any]
) -> None:
    spec = audit_spec(executor=executor, algorithm={"total_steps": 2}, resources={"devices": 2})
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2]
    assert metrics[0].keys() >= EXECUTOR_KEYS
    assert metrics[0]["executor/sync_count"] == 1
    if executor["name"] == "lean_retain":
        assert metrics[0]["executor/retained_graphs"] == 2 * 3  # 2 local samples x K = 3
    assert metrics[0]["ratio/max_abs_dev"] == 0.0
    assert metrics[1]["grad_norm"] > 0


@pytest.fixture(scope="module")
def stale_digenrl(tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path) -> Path:
    """Two steps of digenrl on two gloo ranks (a generator, a trainer), one step stale, trainer-assisted, replaying
    two trained steps a batch; its output directory."""
    tmp_path = tmp_path_factory.mktemp("stale_digenrl")
    executor = {"name": "digenrl", "max_staleness": 1, "trainer_assisted": True, "timestep_batch": 2}
    algorithm = {"total_steps": 2, "prompts_per_step": 4, "global_std": False}
    spec = audit_spec(executor=executor, algorithm=algorithm, resources={"devices": 2})
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return tmp_path / "out"


@pytest.mark.slow
def test_digenrl_streams_one_step_stale_units_from_one_generator_to_one_trainer(stale_digenrl: Path) -> None:
    first, second = read_metrics(stale_digenrl)
    assert first["executor/units"] == second["executor/units"] == 8
    assert first["executor/tag_units"] == 2  # the trainer generated its last group itself
    assert first["executor/stale_fraction"] == 0.0 and first["ratio/max_abs_dev"] < 1e-6
    # step 2: the generator's first group came from theta_0 while step 1 trained
    assert second["executor/stale_fraction"] == 0.25 and second["executor/max_version_lag"] == 1
    assert second["ratio/max_abs_dev"] > 0
    assert second["executor/weight_bytes"] > 0 and (stale_digenrl / "model").exists()


@pytest.mark.slow
def test_digenrl_reports_its_replay_batch_its_generation_time_and_no_trainer_all_reduce(stale_digenrl: Path) -> None:
    """Every rank logs the trainer's step report: kept graphs per replayed batch (timestep_batch 2 of K = 3), the
    generators' rollout time, and no all-reduce over a trainer pool of one."""
    for metrics in read_metrics(stale_digenrl):
        assert metrics["executor/retained_graphs"] == 2
        assert metrics["time/rollout"] > 0 and metrics["executor/sync_count"] == 0


@pytest.mark.slow
def test_digenrl_logs_the_generator_s_wait_for_new_weights(stale_digenrl: Path) -> None:
    for metrics in read_metrics(stale_digenrl):  # the generator is done before the trainer pushes the weights
        assert metrics["executor/generator_idle"] > 0


@pytest.mark.slow
def test_digenrl_logs_the_trainer_s_wait_for_units(stale_digenrl: Path) -> None:
    for metrics in read_metrics(stale_digenrl):  # at least the first unit of each step is received
        assert metrics["executor/trainer_idle"] > 0


@pytest.mark.slow
def test_digenrl_logs_the_unit_buffers_its_trainer_holds(stale_digenrl: Path) -> None:
    """Rank 0 logs the step but is a generator: the bytes are the trainer's 8 units as float64, each its header,
    reward, one reward part, 4 log-probs and 5 latents of the tiny model."""
    held = unit_size(4, (LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE), 1) * 8 * 8
    for metrics in read_metrics(stale_digenrl):
        assert metrics["executor/buffer_bytes"] == held


@pytest.mark.parametrize("fallback", ["native", "lean_reweight"])
def test_lean_retain_falls_back_before_exceeding_its_graph_budget(
    tmp_path: Path, sfumato_home: Path, fallback: str
) -> None:
    guarded = {"name": "lean_retain", "max_retained_graphs": 4, "on_memory_guard": fallback}
    spec = audit_spec(executor=guarded)
    run(write_spec(tmp_path / "guarded.json", spec), tmp_path / "guarded", resume=False)
    (metrics,) = read_metrics(tmp_path / "guarded")
    assert metrics["executor/memory_guard_fallback"] == 1.0
    if fallback == "native":
        assert "executor/retained_graphs" not in metrics  # native's schedule ran, holding no rollout graph
    else:  # lean_reweight's schedule ran: one graph at a time and its advantage check, not retain's 4 x 3 graphs
        assert metrics["executor/retained_graphs"] == 1 and "executor/adv_abs_max_assumed" in metrics


@pytest.mark.slow
def test_digenrl_resumes_from_its_checkpoint_with_the_trainer_s_optimizer_state(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Rank 0 writes checkpoints but is a generator, whose optimizer never steps: the trainer's state must
    reach the checkpoint, or a resumed run restarts AdamW's moments."""
    algorithm = {"total_steps": 4, "prompts_per_step": 2, "global_std": False, "learning_rate": 0.01}
    spec = audit_spec(
        executor={"name": "digenrl"}, algorithm=algorithm, resources={"devices": 2}, checkpoint={"every": 2}
    )
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(straight))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shutil.copytree(straight / "checkpoints" / "step-2", resumed / "checkpoints" / "step-2")
    result = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(resumed), "--resume")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    expected, got = read_metrics(straight)[2:], read_metrics(resumed)
    assert [m["step"] for m in got] == [3, 4]
    for key in ("loss", "grad_norm", "reward/mean"):
        assert [m[key] for m in got] == pytest.approx([m[key] for m in expected], rel=1e-6, abs=1e-12), key
