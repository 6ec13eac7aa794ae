"""The spec at a probe's reduced size: fewer trained steps K and fewer prompts per step, validated as a whole.

The probe (trainer/probe/) runs each executor at these sizes; the advice (trainer/spec/advice.py) prices the same
sizes with the cost model to calibrate it. Torch-free.
"""

from __future__ import annotations

from trainer.spec.executor import ExecutorOptions
from trainer.spec.job import JobSpec

PROBE_TRAINED = 2  # the probe's smaller K where the executor accepts it; the larger is about twice that
PROBE_PROMPTS = (1, 2)  # prompts per step at the probe's two batch sizes (each of group_size samples)


def trained_steps(spec: JobSpec) -> int:
    algo = spec.algorithm
    return algo.train_timesteps or algo.sampling_steps - 1


def resized(spec: JobSpec, trained: int, prompts: int, options: ExecutorOptions | None = None) -> JobSpec:
    """``spec`` at K = ``trained`` and ``prompts`` prompts per step, under ``options`` (default: its own
    executor's); ValueError (a ValidationError) when the algorithm or the executor cannot run that size."""
    data = spec.model_dump()
    data["algorithm"] |= {"train_timesteps": trained, "prompts_per_step": prompts}
    if options is not None:
        data["executor"] = options.model_dump()
    return JobSpec.model_validate(data, context={"stored": True})


def probe_trained(spec: JobSpec, options: ExecutorOptions) -> list[int]:
    """The K values to probe ``options``' executor at: the smallest K ≥ PROBE_TRAINED it accepts on the spec's
    algorithm, then the smallest accepted K of at least twice that (both capped at the spec's K). One value
    where only one is accepted (jagg needs K ≥ its group width; a sliding-window algorithm fixes K)."""
    full = trained_steps(spec)
    accepted = []
    for k in range(1, full + 1):
        try:
            resized(spec, k, spec.algorithm.prompts_per_step, options)
        except ValueError:
            continue
        accepted.append(k)
    if not accepted:
        return [full]
    low = next((k for k in accepted if k >= PROBE_TRAINED), accepted[-1])
    high = next((k for k in accepted if k >= 2 * low), accepted[-1])
    return sorted({low, high})
