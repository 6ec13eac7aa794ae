"""Section 4: the trainer's reporter, on and off, on the tiny model's step time; and its own CPU."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from platform_sections.harness import KEYS, REPO, SPEC, Bench, Figure, load_average, running_job

BLOCK_STEPS = 4  # steps in a row with the reporter on, or off
WARMUP_STEPS = 8  # reporter on: its connection, the server's first requests; not measured


def bench_reporting(bench: Bench, steps: int) -> None:
    print(f"4. reporting overhead ({steps} steps; load {load_average()})")
    job_id, token = running_job(bench, "reporting")
    out = bench.home / "reporting.json"
    env = {
        **bench.env,
        "SFUMATO_API_URL": bench.url,
        "SFUMATO_JOB_ID": str(job_id),
        "SFUMATO_JOB_ATTEMPT": "1",
        "SFUMATO_JOB_TOKEN": token,
    }
    entry = REPO / "bench" / "platform_speed.py"  # its --reporting-child runs reporting_child
    argv = [sys.executable, str(entry), "--reporting-child", str(out), "--steps", str(steps)]
    subprocess.run(argv, env=env, cwd=REPO, check=True, timeout=1800, stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())
    stored = points_stored(bench, job_id)
    pairs = [on / off - 1 for on, off in zip(result["on"], result["off"], strict=True)]
    overhead = statistics.median(pairs) * 100
    low, high = bootstrap_median_interval(pairs)
    on_steps = len(result["on"]) * BLOCK_STEPS
    calls, thread = result["calls_cpu"] / on_steps, result["thread_cpu"] / on_steps
    # All of the thread's CPU (it also ships during the off blocks) against the reporting steps' time.
    share = (result["calls_cpu"] + result["thread_cpu"]) / (sum(result["on"]) * BLOCK_STEPS) * 100
    on_ms, off_ms = statistics.median(result["on"]) * 1000, statistics.median(result["off"]) * 1000
    note = (
        f"{len(pairs)} pairs of {BLOCK_STEPS}-step blocks, on and off in random order within each pair; the "
        f"figure is the median of the pairs' on/off step-time ratios, 95% interval {low * 100:+.2f}% to "
        f"{high * 100:+.2f}% (bootstrap; the noise floor); median step {off_ms:.1f} ms off, {on_ms:.1f} ms on; "
        f"'-' when the interval holds 0.5 (below the noise: see the CPU figure); {stored:,} points stored"
    )
    verdict = True if high * 100 <= 0.5 else False if low * 100 > 0.5 else None
    bench.add(Figure("reporting", "step time, reporting on vs off", overhead, "%", "≤ 0.5", verdict, pairs, note))
    note = (
        f"the reporter's calls on the training thread {calls * 1e6:.0f} µs and its background thread "
        f"{thread * 1e6:.0f} µs of CPU a reporting step (thread CPU clocks, after {WARMUP_STEPS} warm-up steps; "
        "all of the thread's time counted against the reporting steps), over their time; the server's own work "
        "on the reports is not in it"
    )
    bench.add(Figure("reporting", "reporter CPU / step time", share, "%", "≤ 0.5", share <= 0.5, [], note))


def points_stored(bench: Bench, job_id: int) -> int:
    """The job's metric points, counted through the API (whatever the storage)."""
    with bench.client() as http:
        keys = http.get(f"/api/v1/jobs/{job_id}/metrics/keys").json()["keys"]
        params = {"keys": ",".join(keys), "max_points": 100_000}
        series = http.get(f"/api/v1/jobs/{job_id}/metrics", params=params).json()["series"] if keys else []
    return sum(value is not None for s in series for value in s["values"])


def bootstrap_median_interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the median of `values`."""
    rng = random.Random(2)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(rounds * 0.025)], medians[int(rounds * 0.975) - 1]


def reporting_child(out: Path, steps: int) -> None:
    """Train the tiny model in pairs of blocks of steps, the reporter's calls on in one block of each pair and off
    in the other (the order drawn at random, so nothing periodic in the training lines up with them), a sample
    on every 10th reporting step. Writes each block's mean step time, and the reporter's CPU time."""
    import threading

    import torch

    from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
    from trainer.job import TrainingJob
    from trainer.layout import step_batch
    from trainer.models.builtin_tiny import ensure_builtin_tiny
    from trainer.reporting.reporter import Reporter
    from trainer.run import load_spec, step_metrics, to_png

    home = Path(os.environ["SFUMATO_HOME"])
    cached = ensure_builtin_tiny(Path.home() / ".cache" / "sfumato" / "builtin-tiny-sd3")
    (home / cached.name).symlink_to(cached, target_is_directory=True)
    spec_path = home / "reporting-spec.json"
    spec_path.write_text(json.dumps(SPEC))
    spec = load_spec(spec_path)
    layout = EXECUTOR_CLASSES[spec.executor.name].layout
    job = TrainingJob.build(spec, layout)
    executor = make_executor(spec.executor, job)
    pool = job.prompts
    output_dir = home / "reporting-run"
    output_dir.mkdir(exist_ok=True)
    reporter = Reporter.from_environment(output_dir)
    (thread,) = (t for t in threading.enumerate() if t.name.startswith("sfumato-reporter"))
    thread_clock = time.pthread_getcpuclockid(thread.ident)  # type: ignore[arg-type]
    png = to_png(torch.rand(3, 64, 64))
    extra = [f"executor/metric_{i:02d}" for i in range(KEYS)]
    algo = spec.algorithm
    coin = random.Random(0)
    pairs = max(1, steps // (2 * BLOCK_STEPS))
    plan = [True] * WARMUP_STEPS
    for _ in range(pairs):
        first = coin.random() < 0.5
        plan += [first] * BLOCK_STEPS + [not first] * BLOCK_STEPS
    blocks: dict[bool, list[float]] = {True: [], False: []}
    block: list[float] = []
    calls_cpu = 0.0
    thread_cpu = 0.0
    reported = 0
    for step, reporting in enumerate(plan, start=1):
        if step == WARMUP_STEPS + 1:
            calls_cpu, thread_cpu = 0.0, time.clock_gettime(thread_clock)
        started = time.perf_counter()
        batch = step_batch(pool, step, 0, algo.prompts_per_step, algo.group_size, 0, 1, layout)
        result = executor.train_step(batch)
        metrics = step_metrics(result, job, job.dist, time.perf_counter() - started)
        for key in extra[: max(0, KEYS - len(metrics))]:
            metrics[key] = float(step)
        if reporting:
            called = time.thread_time()
            reporter.metrics(step, metrics)
            reporter.progress(step, len(plan), metrics["reward/mean"], metrics["throughput/samples_per_s"])
            reporter.print(f"step {step}/{len(plan)} reward {metrics['reward/mean']:.4f}")
            reported += 1
            if reported % 10 == 1:
                reporter.sample(step, "eval", "a red apple", 0, 0.5, png)
            calls_cpu += time.thread_time() - called
        if step > WARMUP_STEPS:
            block.append(time.perf_counter() - started)
            if len(block) == BLOCK_STEPS:
                blocks[reporting].append(statistics.mean(block))
                block = []
    thread_cpu = time.clock_gettime(thread_clock) - thread_cpu
    reporter.close()
    result = {"on": blocks[True], "off": blocks[False], "calls_cpu": calls_cpu, "thread_cpu": thread_cpu}
    out.write_text(json.dumps(result))
