"""The probe (docs/advisor.md): a few steps of each applicable executor at reduced sizes, on the target host.

One job serves every executor (as in the bench): the audit's session first takes one step of each from the
same weights on one frozen trajectory (exactness class, relative L2 and cosine against native's gradient);
then at each size K ∈ {K₁, K₂} × prompts ∈ {p₁, p₂} (trainer/spec/probe_sizes.py) the executors that accept it run
as ``make bench`` runs them: one warm-up step each, TIMED_ROUNDS interleaved rounds A B C, A B C, … (each
round's step time is kept, and the median is the point's time), and one step each whose peak memory is read, by
the bench's own definition. The advice pairs the executors round by round for its intervals. The unit costs F, F_g and B
are the bench's (trainer/bench.py) at every row count the advice prices. A failure (out of memory at a probe
size, a size the executor refuses) ends that executor's probe with the reason; the others go on.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import torch
import torch.distributed as dist

from trainer.audit import AuditSession, compare
from trainer.bench import cost_shapes, optimizer_seconds, unit_costs
from trainer.dataset_fetch import with_local_datasets
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.host_memory import keep_freed_memory
from trainer.layout import layout_error, step_batch
from trainer.run import load_spec
from trainer.spec import EXECUTORS, JobSpec, NativeOptions, SpecError
from trainer.spec.executor_choice import options_for
from trainer.spec.probe_report import ExecutorProbe, MeasuredUnitCosts, ProbePoint, ProbeReport
from trainer.spec.probe_sizes import PROBE_PROMPTS, probe_trained, resized
from trainer.step_memory import measure_step, start_bytes
from trainer.timing import device_seconds

# Interleaved rounds per probe size: each gives one prediction per executor, and the advice's 95% intervals have
# TIMED_ROUNDS - 1 degrees of freedom (Student's t at 4: 2.78; at 2 it would be 4.30, too wide to decide on).
TIMED_ROUNDS = 5


def probe_prompts(spec: JobSpec, world: int, layout: str) -> list[int]:
    """The two smallest prompt counts the rank layout accepts, from PROBE_PROMPTS upwards."""
    found: list[int] = []
    prompts = PROBE_PROMPTS[0]
    while len(found) < len(PROBE_PROMPTS) and prompts <= 64:
        if layout_error(prompts, spec.algorithm.group_size, world, layout) is None:
            found.append(prompts)
        prompts += 1
    return found


def undo_determinism() -> None:
    """The audit's deterministic kernels would slow the timed steps on a GPU."""
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True


class Prober:
    def __init__(self, spec: JobSpec, names: list[str]) -> None:
        """The audit session (and its job) at the largest of the executors' smaller K, and the smaller batch."""
        self.spec = spec
        self.trained = {name: probe_trained(spec, options_for(spec, name)) for name in names}
        audited = max(ks[0] for ks in self.trained.values())
        layout = "shared" if any(EXECUTOR_CLASSES[n].layout == "shared" for n in names) else "sharded"
        world = int(os.environ.get("WORLD_SIZE", "1"))
        self.prompts = probe_prompts(spec, world, layout)
        self.audit_spec = audit_spec(spec, audited, self.prompts[0])
        self.audited = [n for n in names if accepts(self.audit_spec, n)]
        self.session = AuditSession(self.audit_spec, self.audited)
        self.job = self.session.job
        self.dist = self.job.dist
        self.counter = 0

    def gradients(self, names: list[str]) -> dict[str, ExecutorProbe]:
        """Each executor's class and distance to native's gradient on the session's frozen trajectory."""
        captures = {name: self.session.capture(name) for name in self.audited}
        probes = {name: ExecutorProbe(name=name, exactness=EXECUTOR_CLASSES[name].exactness_class) for name in names}
        for name, capture in captures.items():
            result = compare(capture, captures["native"], self.session.names)  # native against itself: 0, 1
            probes[name] = ExecutorProbe(
                name=name,
                exactness=capture.exactness,  # type: ignore[arg-type]
                gradient_rel_l2=result["rel_l2"],
                gradient_cosine=result["cosine"],
            )
        self.job.replay = None
        undo_determinism()
        return probes

    def rows(self, prompts: int) -> int:
        return prompts * self.spec.algorithm.group_size // self.dist.world_size

    def one_step(self, name: str, executor: object) -> dict[str, float]:
        self.counter += 1
        algo, job = self.job.spec.algorithm, self.job
        batch = step_batch(
            job.prompts,
            self.counter,
            self.spec.seed,
            algo.prompts_per_step,
            algo.group_size,
            self.dist.rank,
            self.dist.world_size,
            EXECUTOR_CLASSES[name].layout,
        )
        self.dist.barrier()
        began = device_seconds(self.dist.device)
        metrics = executor.train_step(batch).metrics  # type: ignore[attr-defined]
        self.dist.barrier()
        return {**metrics, "time/wall": device_seconds(self.dist.device) - began}

    def size(self, trained: int, prompts: int, probes: list[ExecutorProbe], reward_rates: list[float]) -> None:
        """Every executor probed at this size, as ``make bench`` runs them: one warm-up step each, then
        TIMED_ROUNDS rounds A B C … (load drift falls on all alike; each round's time is kept, the median is the
        point's time), then one step each whose peak is read. A failure is that executor's error; the others go on."""
        executors: dict[str, tuple[ExecutorProbe, object]] = {}
        for probe in probes:
            try:
                spec = resized(self.spec, trained, prompts, options_for(self.spec, probe.name))
                self.job.resize(spec)
                executors[probe.name] = (probe, make_executor(options_for(spec, probe.name), self.job))
            except (SpecError, ValueError) as exc:
                self.fail(probe, trained, prompts, exc)
        records: dict[str, list[dict[str, float]]] = {name: [] for name in executors}
        for round_ in range(1 + TIMED_ROUNDS):
            for name, (probe, executor) in list(executors.items()):
                try:
                    metrics = self.one_step(name, executor)
                except (RuntimeError, SpecError, ValueError) as exc:
                    self.fail(probe, trained, prompts, exc)
                    del executors[name]
                    continue
                if round_ > 0:
                    records[name].append(metrics)
        rows = self.rows(prompts)
        for name, (probe, executor) in executors.items():
            try:
                _, memory = measure_step(self.job, lambda n=name, e=executor: self.one_step(n, e))
                peak = memory.rise
            except (RuntimeError, SpecError, ValueError) as exc:
                self.fail(probe, trained, prompts, exc)
                continue
            if self.dist.world_size > 1:
                value = torch.tensor([float(peak)], device=self.dist.device)
                dist.all_reduce(value, op=dist.ReduceOp.MAX)
                peak = int(value.item())
            timed = records[name]
            probe.points.append(
                ProbePoint(
                    trained=trained,
                    prompts=prompts,
                    rows=rows,
                    step_seconds=statistics.median(m["time/wall"] for m in timed),
                    round_seconds=[m["time/wall"] for m in timed],
                    sync_seconds=statistics.median(m.get("time/sync", 0.0) for m in timed),
                    peak_bytes=peak,
                )
            )
            if name == "native":
                reward_rates.append(statistics.median(m.get("time/reward", 0.0) for m in timed) / rows)

    def fail(self, probe: ExecutorProbe, trained: int, prompts: int, exc: BaseException) -> None:
        """The executor's first failure is its error; its remaining sizes are skipped."""
        probe.error = f"probe failed at K={trained}, {prompts} prompt(s): {failure(exc)}"
        self.recover()

    def run(self, probes: list[ExecutorProbe]) -> list[float]:
        """Every size of the grid, each executor at the K values it accepts; native's reward seconds per sample."""
        reward_rates: list[float] = []
        sizes = sorted({(k, p) for probe in probes for k in self.trained[probe.name] for p in self.prompts})
        for trained, prompts in sizes:
            here = [p for p in probes if p.error is None and trained in self.trained[p.name]]
            if here:
                self.size(trained, prompts, here, reward_rates)
        return reward_rates

    def recover(self) -> None:
        self.job.optimizer.zero_grad(set_to_none=True)
        if self.dist.device.type == "cuda":
            torch.cuda.empty_cache()


def audit_spec(spec: JobSpec, trained: int, prompts: int) -> JobSpec:
    """The audit's size under the spec's own executor, or under native's where that executor refuses it."""
    try:
        return resized(spec, trained, prompts)
    except ValueError:
        return resized(spec, trained, prompts, NativeOptions())


def accepts(spec: JobSpec, name: str) -> bool:
    try:
        options_for(spec, name)
    except SpecError:
        return False
    return True


def failure(exc: BaseException) -> str:
    if isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower():
        return "out of memory"
    if isinstance(exc, SpecError):
        return f"{exc.field}: {exc.message}"
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def probe(spec_path: Path, names: list[str] | None = None, output_dir: Path | None = None) -> ProbeReport:
    """Probe ``names`` (default: every executor) on this rank; every rank returns the same report. A team dataset
    the spec names is fetched into ``output_dir`` first, as a training run fetches it."""
    spec = load_spec(spec_path)
    if output_dir is not None:
        spec = with_local_datasets(spec, output_dir)
    asked = ["native", *[n for n in (names or list(EXECUTORS)) if n != "native"]]
    refused: dict[str, str] = {}
    for name in asked:
        try:
            options_for(spec, name)
        except SpecError as exc:
            refused[name] = f"cannot run this spec: {exc.field}: {exc.message}"
    runnable = [n for n in asked if n not in refused]
    if "native" in refused:
        raise SpecError("executor.name", f"the probe needs native as its reference: {refused['native']}")
    keep_freed_memory()  # as make bench: freed host blocks reused, as a GPU's caching allocator does
    prober = Prober(spec, runnable)
    probes = prober.gradients(runnable)
    job, device = prober.job, prober.dist.device
    resident = start_bytes(job)
    reward_rates = prober.run([probes[name] for name in runnable])
    full_rows = spec.algorithm.prompts_per_step * spec.algorithm.group_size // prober.dist.world_size
    job.resize(spec)
    chosen = [options_for(spec, name) for name in runnable]
    costs = unit_costs(job, cost_shapes(spec, chosen, [full_rows, *(prober.rows(p) for p in prober.prompts)]))
    report = ProbeReport(
        device_type=device.type,
        device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        world_size=prober.dist.world_size,
        unit_costs=[
            MeasuredUnitCosts(rows=rows, forward=c["F"], forward_grad=c["F_g"], backward=c["B"], decode=c["D"])
            for rows, c in costs.items()
        ],
        reward_seconds_per_sample=statistics.median(reward_rates) if reward_rates else 0.0,
        optimizer_seconds=optimizer_seconds(job),
        resident_bytes=resident,
        memory_method=(
            "trainer/step_memory.py, as the run and make bench: the rise of live bytes above the step's start ("
            + ("CUDA's allocator peak after a reset" if device.type == "cuda" else "torch profiler allocation records")
            + "); resident: what a step starts from"
        ),
        executors=[probes.get(name) or ExecutorProbe(name=name, error=refused[name]) for name in asked],
    )
    prober.dist.barrier()
    prober.dist.close()
    return report
