"""``model.reference`` (issue 27 item 4): under full fine-tuning on one rank or DDP, 'cpu' keeps the KL's frozen
reference in host memory and swaps it into the policy's weights for each reference forward (Flow-Factory's
``ref_param_device: cpu``). It trains bit for bit as 'device' does; on the meta device the host copy stays on the
host while every op of the step runs on the device; and the reference is a memory component of its own, none of
it on the device under 'cpu'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from tests.executors.test_meta_device_step import META, OneDevicePerOp, meta_job
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import JobSpec, parse_spec
from trainer.step_memory import StepMemory, measure_step

KL = {"kl_beta": 0.04, "total_steps": 2}


def kl_spec(executor: dict[str, Any], reference: str, algorithm: str = "flow_grpo") -> JobSpec:
    data = audit_spec(executor=executor, model={"reference": reference}, algorithm={"name": algorithm, **KL})
    if algorithm != "flow_grpo":  # the forward family re-noises clean samples: no SDE step options
        for option in ("noise_level", "clip_range"):
            del data["algorithm"][option]
    return parse_spec(data)


def two_steps(spec: JobSpec) -> tuple[TrainingJob, list[dict[str, float]], StepMemory]:
    """The job after two steps, each step's metrics, and the second step's memory."""
    layout = EXECUTOR_CLASSES[spec.executor.name].layout
    job = TrainingJob.build(spec, layout)
    trainer = make_executor(spec.executor, job)
    algo, metrics = spec.algorithm, []
    for step in (1, 2):
        batch = step_batch(job.prompts, step, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, layout)
        result, memory = measure_step(job, lambda b=batch: trainer.train_step(b))
        metrics.append(result.metrics)
    return job, metrics, memory


@pytest.mark.parametrize(
    ("executor", "algorithm"),
    [({"name": "native"}, "flow_grpo"), ({"name": "lean_retain"}, "flow_grpo"), ({"name": "native"}, "dgpo")],
    ids=["native", "lean_retain", "dgpo"],
)
def test_a_host_reference_trains_bit_for_bit_as_a_device_reference(
    sfumato_home: Path, tiny_model_dir: Path, executor: dict[str, Any], algorithm: str
) -> None:
    """Two steps: the second's KL is off the reference. lean_retain forwards the reference while its graphs are kept,
    which saved the very parameters the swap writes into; DGPO's loss reads the reference's conditional velocity
    beside its old policy, swapped into the same parameters."""
    on_device, device_metrics, _ = two_steps(kl_spec(executor, "device", algorithm))
    on_host, host_metrics, _ = two_steps(kl_spec(executor, "cpu", algorithm))
    assert on_host.reference is None and on_host.host_reference is not None
    assert device_metrics[1]["kl"] > 0
    for key in ("kl", "loss", "grad_norm"):
        assert [m[key] for m in host_metrics] == [m[key] for m in device_metrics], key
    for mine, theirs in zip(on_host.parameters, on_device.parameters, strict=True):
        assert torch.equal(mine, theirs)


def test_the_reference_is_its_own_memory_component_and_a_host_one_holds_none_of_it_on_the_device(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    job, _, on_device = two_steps(kl_spec({"name": "native"}, "device"))
    _, _, on_host = two_steps(kl_spec({"name": "native"}, "cpu"))
    assert job.reference is not None
    copy = sum(t.numel() * t.element_size() for t in [*job.reference.parameters(), *job.reference.buffers()])
    assert (on_device.reference, on_host.reference) == (copy, 0)
    assert on_host.parameters == on_device.parameters
    assert on_device.start - on_host.start == copy  # what the step starts from: the copy is not on the device
    assert on_host.peak < on_device.peak


class HostCopies(OneDevicePerOp):
    """Also answers a copy out of a meta tensor into a host one (the swap's stash: a meta tensor has no values),
    and counts the copies each way."""

    def __init__(self) -> None:
        super().__init__()
        self.to_host = self.to_device = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is torch.ops.aten.copy_.default and args[0].device != args[1].device:
            if args[1].device == META:
                self.to_host += 1
                return args[0]
            self.to_device += 1
        return super().__torch_dispatch__(func, types, args, kwargs)


def test_on_the_meta_device_a_host_reference_stays_on_the_host_and_the_step_runs_on_the_device(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Every op of the step, the reference's forward included, is on the device; the only host traffic is the swap:
    each reference forward stashes the policy's weights and loads the reference's, then loads the stash back."""
    spec = kl_spec({"name": "native"}, "cpu")
    with HostCopies():
        job = meta_job(spec, "sharded")
    assert job.host_reference is not None and job.reference is None
    trainer = make_executor(spec.executor, job)
    algo = spec.algorithm
    batch = step_batch(job.prompts, 1, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
    with HostCopies() as check:
        trainer.train_step(batch)
    assert check.mixed == []
    assert {w.device for w in [*job.host_reference.weights, *job.host_reference.stash]} == {torch.device("cpu")}
    assert all(p.device == META for p in job.parameters)
    uses = algo.train_timesteps  # a reference forward per trained step
    assert (check.to_host, check.to_device) == (uses * len(job.parameters), 2 * uses * len(job.parameters))


def test_inside_an_enclosing_autocast_region_a_host_reference_forwards_its_own_weights(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Autocast caches its cast of a weight that requires grad until its outermost region ends: a reference swapped
    into the policy after the policy's forward in one region would read the policy's cached bf16 weights."""
    spec = parse_spec(audit_spec(model={"reference": "cpu", "precision": "bf16"}, algorithm=KL))
    job = TrainingJob.build(spec, "sharded")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in job.parameters:  # the policy off the reference
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    x = torch.randn((1, *job.family.latent_shape), generator=generator)
    sigma, cond = torch.tensor([0.5]), job.conditioning(["a red apple"])
    with torch.no_grad():
        alone = job.conditional_reference_velocity(x, sigma, cond)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            policy = job.family.velocity(job.policy, x, sigma, cond, None, 1.0)
            enclosed = job.conditional_reference_velocity(x, sigma, cond)
    assert not torch.equal(policy, alone)
    assert torch.equal(enclosed, alone)
