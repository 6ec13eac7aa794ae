"""The executor benchmark (docs/executors.md §5): executors interleaved in one process run.

Every executor trains the same job (model, spec, batch shape) with its own step counter:
warm-up rounds are discarded, then rounds A B A B … are timed so drift cancels. Per executor, medians
over the rounds (a step slowed by another process on the machine moves them least):
the phase split from its metrics (rollout / reward / train / sync), samples/s, peak memory, the
speedup over native, the analytical bound from this run's own profiled unit costs, and
measured/bound. Speed is reported, never asserted.

Unit costs are medians over repeated step forwards of the model at each batch shape an
executor uses: F (forward without grad), F_g (forward with grad), B (backward of one step's
loss) and D (the VAE decode of the final latents); t_fix is the measured reward phase plus one
optimizer step. The predicted step time is the
cost model's (trainer/spec/cost_model.py, one formula per executor) at these unit costs plus t_fix, plus
the executor's measured sync time (digenrl's: its gradient all-reduce and the weight push).
Every rank runs one CPU thread, and keeps the host memory it frees (trainer/host_memory.py), as a GPU's
caching allocator does.
Memory is the run's own definition (trainer/step_memory.py), read over one extra untimed step per executor:
``peak_bytes`` the largest rise of live bytes above the step's start (CUDA's allocator peak after a reset, or
the torch profiler's allocation records on the CPU), ``start_bytes`` what the step starts from, and the
components by name; each the maximum over ranks.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from trainer.audit import options_for
from trainer.executors.base import Executor
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.host_memory import keep_freed_memory
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.loss import clipped_policy_loss
from trainer.run import load_spec
from trainer.spec import DigenrlOptions, ExecutorOptions, JaggOptions, JobSpec, SpecError
from trainer.spec.cost_model import UnitCosts, step_cost
from trainer.step_memory import COMPONENTS, StepMemory, measure_step
from trainer.timing import device_seconds

PHASES = ("rollout", "reward", "train", "sync")
MEMORY_METHOD = {
    False: "start: the job's tensors; rise: torch profiler allocation records (profile_memory) above the step start",
    True: "start: CUDA allocated bytes; rise: max_memory_allocated above the start after reset_peak_memory_stats",
}
REPEATS = 7


def unit_costs(job: TrainingJob, shapes: list[int]) -> dict[int, dict[str, float]]:
    """Median F, F_g and backward of one step forward, and D, at each row count (step 0, one prompt),
    measured round-robin across shapes so load drift spreads over all of them."""
    family, denoiser, device = job.family, job.denoiser, job.dist.device

    def forward_of(rows: int) -> tuple[Any, torch.Tensor]:
        prompts = job.prompts[:1] * rows  # one prompt of the job's own set (an edit set's row has its image)
        cond, uncond = job.conditioning(prompts), job.unconditional(prompts)
        x = torch.randn(rows, *family.latent_shape, generator=torch.Generator().manual_seed(0)).to(job.dist.device)
        index = denoiser.grid.index(0, rows)
        ones = torch.ones(rows, device=x.device)

        def forward() -> torch.Tensor:
            out = denoiser.toward(job.policy, x, index, cond, uncond, x + 0.01)
            return clipped_policy_loss(out.log_prob, out.log_prob.detach(), ones, 1e-4).loss

        return forward, x

    forwards = {rows: forward_of(rows) for rows in shapes}
    samples: dict[int, dict[str, list[float]]] = {rows: {"F": [], "F_g": [], "B": [], "D": []} for rows in shapes}
    for _ in range(REPEATS):
        for rows, (forward, x) in forwards.items():
            began = device_seconds(device)
            with torch.no_grad():
                forward()
            graphed = device_seconds(device)
            loss = forward()
            backward = device_seconds(device)
            loss.backward()
            done = device_seconds(device)
            family.decode(x)
            decoded = device_seconds(device)
            samples[rows]["F"].append(graphed - began)
            samples[rows]["F_g"].append(backward - graphed)
            samples[rows]["B"].append(done - backward)
            samples[rows]["D"].append(decoded - done)
    job.optimizer.zero_grad(set_to_none=True)
    return {rows: {k: statistics.median(v) for k, v in kinds.items()} for rows, kinds in samples.items()}


def cost_shapes(spec: JobSpec, options: list[ExecutorOptions], rows: list[int]) -> list[int]:
    """The row counts the cost model prices for these executors: ``rows``, one row (the batching ratio), a
    group (digenrl's generators) and digenrl's timestep batch."""
    algo = spec.algorithm
    trained = algo.train_timesteps or algo.sampling_steps - 1
    shapes = {1, algo.group_size, *rows}
    for chosen in options:
        if isinstance(chosen, DigenrlOptions):
            shapes.add(min(chosen.timestep_batch or trained, trained))
    return sorted(shapes)


def optimizer_seconds(job: TrainingJob) -> float:
    """One clip + AdamW step on zero gradients, restored afterwards."""
    saved = [p.detach().clone() for p in job.parameters]
    state = job.optimizer.state_dict()
    for param in job.parameters:
        param.grad = torch.zeros_like(param)
    began = device_seconds(job.dist.device)
    torch.nn.utils.clip_grad_norm_(job.parameters, job.spec.algorithm.max_grad_norm)
    job.optimizer.step()
    seconds = device_seconds(job.dist.device) - began
    job.optimizer.load_state_dict(state)
    job.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for param, value in zip(job.parameters, saved, strict=True):
            param.copy_(value)
    return seconds


def predicted_seconds(
    spec: JobSpec, options: ExecutorOptions, costs: dict[int, dict[str, float]], fixed: float, sync: float, rows: int
) -> float:
    """The cost model's step time (trainer/spec/cost_model.py) from this run's measured unit costs, plus the
    executor's measured sync time."""

    def measured(count: int) -> UnitCosts:
        return UnitCosts(costs[count]["F"], costs[count]["F_g"], costs[count]["B"], costs[count]["D"])

    return step_cost(spec, options, measured, rows, fixed) + sync


def bench(spec_path: Path, names: list[str], rounds: int = 3, warmup: int = 1) -> dict[str, Any]:
    spec = load_spec(spec_path)
    unknown = [n for n in names if n not in EXECUTOR_CLASSES]
    if unknown:
        raise SpecError("executor.name", f"cannot bench {', '.join(unknown)}")
    names = ["native", *[n for n in names if n != "native"]]
    steps = spec.algorithm.model_copy(update={"total_steps": warmup + rounds + 1})
    spec = spec.model_copy(update={"algorithm": steps})
    options = {name: options_for(spec, name) for name in names}
    torch.set_num_threads(1)  # like torchrun's ranks: a tiny model gains nothing from threads, and drifts less
    keep_freed_memory()  # freed blocks reused, as on a GPU, not page-faulted in again every step
    shared = any(EXECUTOR_CLASSES[name].layout == "shared" for name in names)
    job = TrainingJob.build(spec, "shared" if shared else "sharded", replicate=True)  # the strictest layout
    distributed, pool, algo = job.dist, job.prompts, spec.algorithm
    executors: dict[str, Executor] = {}
    for name in names:
        executors[name] = make_executor(options[name], job)
    counters = dict.fromkeys(names, 0)
    records: dict[str, list[dict[str, float]]] = {name: [] for name in names}

    def one_step(name: str, memory: dict[str, StepMemory] | None = None) -> dict[str, float]:
        """One step of ``name``; with ``memory``, its memory is measured into it (the step's time then counts
        the measurement)."""
        counters[name] += 1
        batch = step_batch(
            pool,
            counters[name],
            spec.seed,
            algo.prompts_per_step,
            algo.group_size,
            distributed.rank,
            distributed.world_size,
            EXECUTOR_CLASSES[name].layout,
        )
        distributed.barrier()
        began = device_seconds(distributed.device)
        if memory is None:
            metrics = executors[name].train_step(batch).metrics
        else:
            result, memory[name] = measure_step(job, lambda: executors[name].train_step(batch))
            metrics = result.metrics
        distributed.barrier()
        return {**metrics, "time/wall": device_seconds(distributed.device) - began}

    for index in range(warmup + rounds):
        for name in names:
            metrics = one_step(name)
            if index >= warmup:
                records[name].append(metrics)
    memories: dict[str, StepMemory] = {}
    for name in names:
        one_step(name, memories)

    rows = algo.prompts_per_step * algo.group_size // distributed.world_size
    trained = algo.train_timesteps or algo.sampling_steps - 1
    costs = unit_costs(job, cost_shapes(spec, list(options.values()), [rows]))
    fixed_reward = statistics.median(m["time/reward"] for m in records["native"])
    fixed = fixed_reward + optimizer_seconds(job)

    samples = algo.prompts_per_step * algo.group_size
    summary: dict[str, Any] = {}
    for name in names:
        phases = {f"time/{p}": statistics.median(m.get(f"time/{p}", 0.0) for m in records[name]) for p in PHASES}
        wall = statistics.median(m["time/wall"] for m in records[name])
        sync = phases["time/sync"]
        summary[name] = {
            "step_seconds": wall,
            **phases,
            "samples_per_s": samples / wall,
            "peak_bytes": memories[name].rise,
            "start_bytes": memories[name].start,
            "memory": memories[name].components,
            "predicted_seconds": predicted_seconds(spec, options[name], costs, fixed, sync, rows),
            "executor_metrics": {
                k: statistics.mean(m[k] for m in records[name]) for k in records[name][0] if k.startswith("executor/")
            },
        }
    native = summary["native"]
    for result in summary.values():
        result["speedup"] = native["step_seconds"] / result["step_seconds"]
        result["bound"] = native["predicted_seconds"] / result["predicted_seconds"]
        result["efficiency"] = result["speedup"] / result["bound"]
    summary = reduce_over_ranks(summary, distributed.world_size)
    b = costs[rows]["B"] / costs[rows]["F_g"]
    ideal = (algo.sampling_steps + (1 + b) * trained) / (algo.sampling_steps + b * trained)
    report = {
        "spec": str(spec_path),
        "world_size": distributed.world_size,
        "finetune": spec.model.finetune,
        "T": algo.sampling_steps,
        "K": trained,
        "samples": samples,
        "rounds": rounds,
        "warmup": warmup,
        "unit_costs": {str(k): v for k, v in costs.items()},
        "fixed_seconds": fixed,
        "b_measured": b,
        "batching": costs[rows]["F"] / (rows * costs[1]["F"]),  # a batch of `rows` against `rows` batches of 1
        "ideal_lean_speedup": ideal,
        # JAGG's routed groups n_J, shared by the jagg executors of the run (their audit cosine depends on it)
        "routed_groups": next((o.routed_groups(trained) for o in options.values() if isinstance(o, JaggOptions)), None),
        "memory_method": MEMORY_METHOD[distributed.device.type == "cuda"],
        "executors": summary,
    }
    distributed.barrier()
    distributed.close()
    return report


def reduce_over_ranks(summary: dict[str, Any], world: int) -> dict[str, Any]:
    """Memory figures: the maximum over ranks (digenrl's trainer is not rank 0)."""
    if world == 1:
        return summary
    for result in summary.values():
        names = list(result["memory"])
        figures = torch.tensor(
            [float(result["peak_bytes"]), float(result["start_bytes"])] + [float(result["memory"][n]) for n in names]
        )
        dist.all_reduce(figures, op=dist.ReduceOp.MAX)
        result["peak_bytes"], result["start_bytes"] = int(figures[0]), int(figures[1])
        result["memory"] = {n: int(v) for n, v in zip(names, figures[2:].tolist(), strict=True)}
    return summary


def config_label(report: dict[str, Any]) -> str:
    """"full T=10 K=9 R=1", with JAGG's routed groups where jagg executors ran ("... n_J=2")."""
    label = f"{report['finetune']} T={report['T']} K={report['K']} R={report['world_size']}"
    routed = report.get("routed_groups")
    return label if routed is None else f"{label} n_J={routed}"


def markdown(reports: list[dict[str, Any]]) -> str:
    """The timing table; with an "audit cosine" column where the reports carry each executor's audit cosine
    against native (bench/executors.py adds it)."""
    audited = any("audit_cosine" in r for report in reports for r in report["executors"].values())
    lines = [
        "| config | executor | step s | rollout | reward | train | sync | samples/s | peak MiB | speedup | bound "
        "| measured/bound |" + (" audit cosine |" if audited else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if audited else ""),
    ]
    for report in reports:
        config = config_label(report)
        for name, r in report["executors"].items():
            cosine = r.get("audit_cosine")
            audit = (f" {cosine:.4f} |" if cosine is not None else " – |") if audited else ""
            lines.append(
                f"| {config} | {name} | {r['step_seconds']:.3f} | {r['time/rollout']:.3f} | {r['time/reward']:.3f} "
                f"| {r['time/train']:.3f} | {r['time/sync']:.3f} | {r['samples_per_s']:.1f} "
                f"| {r['peak_bytes'] / 2**20:.1f} | {r['speedup']:.2f}x | {r['bound']:.2f}x | {r['efficiency']:.2f} |"
                + audit
            )
    return "\n".join(lines)


def memory_markdown(reports: list[dict[str, Any]]) -> str:
    """Each executor's step memory by component (MiB), against the measured peak: start + the step's rise."""
    lines = [
        "| config | executor | " + " | ".join(COMPONENTS) + " | sum | measured peak | sum / peak |",
        "|---|---|" + "---|" * (len(COMPONENTS) + 3),
    ]
    for report in reports:
        config = config_label(report)
        for name, r in report["executors"].items():
            parts = [r["memory"][c] for c in COMPONENTS]
            peak = r["start_bytes"] + r["peak_bytes"]
            cells = " | ".join(f"{v / 2**20:.2f}" for v in parts)
            lines.append(
                f"| {config} | {name} | {cells} | {sum(parts) / 2**20:.2f} | {peak / 2**20:.2f} "
                f"| {sum(parts) / max(1, peak):.2f} |"
            )
    return "\n".join(lines)
