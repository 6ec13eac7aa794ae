"""Device-clean steps (issue 27 item 1): one whole training step of every executor with the model, the
latents, the embeddings and the rewards on the ``meta`` device, under a dispatch mode that fails on any op
whose tensors are on more than one device.

Every tensor the step makes must be on the job's device. Only explicit transfers may cross (the plan's
host-side step indices going to the device, the rewards coming back for the advantages): on CUDA an op
mixing a host tensor into device math is the "Tensor on device cpu is not on the expected device" of the
first GPU step. A meta tensor has no values, so where the host reads one (a logged metric, a reward
copied back) the mode answers zeros: what is checked is where each op runs, not what it computes.
DigenRL needs two ranks for a whole step; its generator's rollout and its trainer's replay of the units
are run here, the two halves of its step. The audit's set-up and captures and the bench's unit costs are
checked the same way.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from tests.executors.conftest import audit_spec
from trainer.algorithms.registry import make_algorithm
from trainer.audit import AuditSession
from trainer.bench import unit_costs
from trainer.distributed import Distributed
from trainer.executors.digenrl import DigenrlExecutor
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.executors.step_report import StepReport
from trainer.executors.tsp_replay import replay_unit
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.models.loading import load_family
from trainer.rewards.background import BackgroundScorer
from trainer.rewards.registry import WeightedReward
from trainer.spec import DigenrlOptions, JobSpec, parse_spec

META = torch.device("meta")
TRANSFERS = {torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default}
EXECUTORS = {
    "native": {"name": "native"},
    "lean_retain": {"name": "lean_retain"},
    "lean_reweight": {"name": "lean_reweight", "kl": "extra_vjp"},
    "jagg": {"name": "jagg", "group_width": 2},
    "jagg_retain": {"name": "jagg_retain", "group_width": 2},
    "jagg_reweight": {"name": "jagg_reweight", "group_width": 2, "kl": "extra_vjp"},
}
ALGORITHMS = {
    "flow_grpo+kl": {"kl_beta": 0.04},
    "dance_grpo": {"name": "dance_grpo", "train_timesteps": 2, "global_std": False},
    "flash_grpo": {"name": "flash_grpo", "candidate_steps": 3},
}

# The spec's refusal: JAGG (alone or composed) aggregates groups of steps, Flash-GRPO trains one.
REFUSED = {(name, "flash_grpo") for name in ("jagg", "jagg_retain", "jagg_reweight")}


class OneDevicePerOp(TorchDispatchMode):
    """Records every op whose tensor arguments span devices (explicit transfers excepted), and every host read
    of a meta tensor, which answers zeros."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []
        self.host_reads: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        devices = {t.device for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        if func is torch.ops.aten._local_scalar_dense.default and devices == {META}:
            self.host_reads.append(caller())
            return torch.zeros((), dtype=args[0].dtype).item()
        if func is torch.ops.aten._to_copy.default and devices == {META} and kwargs.get("device") not in (None, META):
            self.host_reads.append(caller())
            return torch.zeros(args[0].shape, dtype=kwargs.get("dtype") or args[0].dtype, device=kwargs["device"])
        if func not in TRANSFERS and len(devices) > 1:
            self.mixed.append(f"{func} on {sorted(map(str, devices))} at {caller()}")
        return func(*args, **kwargs)


def caller() -> str:
    """The innermost trainer line on the stack."""
    frame = next(f for f in reversed(traceback.extract_stack()) if "/trainer/" in f.filename)
    return f"{frame.filename}:{frame.lineno}"


def mean_pixel(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    """A reward computed where the images are."""
    return images.mean(dim=(1, 2, 3))


def meta_job(spec: JobSpec, layout: str) -> TrainingJob:
    """The spec's job with every module of its model family, its reward and its device on ``meta``."""
    family = load_family(spec.model, META)
    reward = WeightedReward([], META)
    reward.parts = [(part.name, part.weight, mean_pixel) for part in spec.reward]
    algorithm = make_algorithm(spec.algorithm, family.sigmas(spec.algorithm.sampling_steps), spec.seed)
    job = TrainingJob(spec, Distributed(0, 1, 0, META), family, algorithm, reward)
    job.scorer = BackgroundScorer(reward, background=False)  # the mode sees this thread's ops only
    job.layout, job.prompts = layout, ["a red apple", "a blue sky", "a green field"]
    return job


def spec_for(executor: dict[str, Any], algorithm: dict[str, Any]) -> JobSpec:
    return parse_spec(audit_spec(executor=executor, algorithm={"prompts_per_step": 2, "group_size": 2, **algorithm}))


STEPS_CHECKED: dict[str, tuple[OneDevicePerOp, dict[str, float]]] = {}


def checked_step(spec: JobSpec) -> tuple[OneDevicePerOp, dict[str, float]]:
    """One training step of the spec's executor on the meta device, under the check; a spec checked earlier in
    this module (the whole step at T = 4 is also the host-read test's shorter step) is not run again."""
    key = spec.model_dump_json()
    if key not in STEPS_CHECKED:
        STEPS_CHECKED[key] = unchecked_step(spec)
    return STEPS_CHECKED[key]


def unchecked_step(spec: JobSpec) -> tuple[OneDevicePerOp, dict[str, float]]:
    job = meta_job(spec, EXECUTOR_CLASSES[spec.executor.name].layout)
    trainer = make_executor(spec.executor, job)
    algo = spec.algorithm
    batch = step_batch(job.prompts, 1, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
    with OneDevicePerOp() as check:
        result = trainer.train_step(batch)
    assert all(p.device == META for p in job.parameters)
    return check, result.metrics


@pytest.mark.parametrize(
    ("executor", "algorithm"),
    [(EXECUTORS[e], ALGORITHMS[a]) for e in EXECUTORS for a in ALGORITHMS if (e, a) not in REFUSED],
    ids=[f"{e}-{a}" for e in EXECUTORS for a in ALGORITHMS if (e, a) not in REFUSED],
)
def test_a_whole_training_step_on_the_meta_device_mixes_no_devices(
    sfumato_home: Path, tiny_model_dir: Path, executor: dict[str, Any], algorithm: dict[str, Any]
) -> None:
    check, metrics = checked_step(spec_for(executor, algorithm))
    assert check.mixed == []
    assert metrics.keys() >= {"loss", "grad_norm"}


@pytest.mark.parametrize("executor", list(EXECUTORS.values()), ids=list(EXECUTORS))
def test_no_host_read_happens_per_timestep_the_step_reads_as_often_at_t_4_as_at_t_5(
    sfumato_home: Path, tiny_model_dir: Path, executor: dict[str, Any]
) -> None:
    """Flow-GRPO with a KL at T = 4 (K = 3) and T = 5 (K = 4): a read inside the rollout's or the trained steps'
    loop would be made more often at T = 5."""
    short, _ = checked_step(spec_for(executor, {**ALGORITHMS["flow_grpo+kl"], "sampling_steps": 4}))
    long, _ = checked_step(spec_for(executor, {**ALGORITHMS["flow_grpo+kl"], "sampling_steps": 5}))
    assert sorted(long.host_reads) == sorted(short.host_reads)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS.values()), ids=list(ALGORITHMS))
def test_digenrl_s_generation_and_replay_on_the_meta_device_mix_no_devices(
    sfumato_home: Path, tiny_model_dir: Path, algorithm: dict[str, Any]
) -> None:
    spec = spec_for({"name": "native"}, algorithm)
    job = meta_job(spec, "sharded")
    options = DigenrlOptions(rollout_devices=1)
    digenrl = DigenrlExecutor(job, options)
    with OneDevicePerOp() as check:
        batch, plan = digenrl.global_batch(1)
        units = digenrl.generate(batch, plan, 0)
        for unit in units:
            replay_unit(job, options, unit, 1.0, plan, batch, len(batch.prompts), StepReport())
        job.optimizer_step()
    assert check.mixed == []
    assert len(units) == spec.algorithm.group_size


def test_the_audit_s_set_up_and_captures_on_the_meta_device_mix_no_devices(
    sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit's own job (a meta one), its whole-batch rollout and replay, and each executor's capture (no KL: the
    offset off the reference divides by the weights' RMS, which the meta device answers with 0)."""
    spec = spec_for({"name": "native"}, {})
    monkeypatch.setattr(TrainingJob, "build", lambda spec, layout, replicate=False: meta_job(spec, layout))
    with OneDevicePerOp() as check:
        session = AuditSession(spec, ["native", "lean_retain"])
        for name in ("native", "lean_retain"):
            session.capture(name)
    assert check.mixed == []


def test_the_bench_s_unit_costs_on_the_meta_device_mix_no_devices(sfumato_home: Path, tiny_model_dir: Path) -> None:
    job = meta_job(spec_for({"name": "native"}, {}), "sharded")
    with OneDevicePerOp() as check:
        unit_costs(job, [1, 2])
    assert check.mixed == []


@pytest.mark.parametrize("family", ["flux", "wan", "qwen_image"])
def test_a_native_step_of_every_other_family_on_the_meta_device_mixes_no_devices(
    sfumato_home: Path, family: str
) -> None:
    from trainer.models.builtin_tiny import ensure_builtin_tiny

    ensure_builtin_tiny(family=family)
    model = {"family": family, "path": "builtin:tiny"}
    spec = parse_spec(audit_spec(model=model, algorithm={"prompts_per_step": 2, "group_size": 2}))
    check, metrics = checked_step(spec)
    assert check.mixed == []
    assert metrics.keys() >= {"loss", "grad_norm"}
