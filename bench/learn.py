"""``make bench-learn``: which method reaches the reward first, in wall-clock seconds?

Runs every algorithm of the trainer's registry on the README's first job (``examples/shapes-demo.json``:
``builtin:shapes`` trained on ``orange_background``) under its fastest executor (below), for 3 seeds in one
run, interleaved: a round is one seed, and each round runs every algorithm once, in an order that reverses
every second round, so that a machine whose load drifts slows every algorithm alike. Flow-GRPO under native
runs in every round too: its final reward (the median over seeds of its last step's ``reward/mean``) is the
target R every algorithm is timed to.

Per algorithm it prints the steps and seconds to reach R (the first step whose ``reward/mean`` is at least R;
the median over seeds, "—" when fewer than half the seeds reached it), its seconds to R as a ratio to
Flow-GRPO native's seconds to R in the same seed (the rounds interleave, so a ratio within a round is fair on a
host whose load drifts between rounds) and the median of those ratios, the final reward (the mean of the last
10 steps, mean over seeds) and the gain in standard errors (each seed's last-10 mean minus its first-10 mean;
their mean over the standard error of that mean across seeds). Seconds are the trainer's own step times
summed (``time/step``: the model's loading and the eval passes, the same for every algorithm, left out).
The target line says whether any method's median ratio is at most 1/3 (issue 28's benchmark target).

The fastest executor of an algorithm: among the executors that can run its spec (every one is exact, E0/E1,
or class A: docs/executors.md §1), the one with the largest analytical speedup over native
(``trainer.spec.cost_model.bound_speedup``), the first in the executor union's order on a tie.

It writes ``bench/results/learn.md`` (after every run, so a cut-short run keeps what it finished),
``bench/results/learn-seconds.png`` (reward against seconds, one line per algorithm and seed, R dashed) and
the before/after strip ``bench/results/learn-strip.png`` (the demo's eval prompts at step 0, then each
algorithm's policy at its last step, in the first round), and every run's rewards and seconds to
``bench/results/learn-runs.json``, from which ``--tabulate`` writes the table and plot again without training.
A benchmark, not a test: it asserts nothing.

Each algorithm keeps the demo's spec and changes only the fields that are its own (the papers' SDE levels
and clip ranges, DanceGRPO's trained steps, Flow-GRPO-Fast's window); the others get their own defaults.
The forward-process algorithms (DiffusionNFT, AWM, DGPO) run twice: with the demo's rollout (8 steps,
CFG 3.0), the same rollout work as every other row, and with their upstream rollout's guidance, CFG-free
(``UPSTREAM_ROLLOUT``), which halves the rollout's forward passes (bench/results/learn.md says why).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# One thread: on a CPU shared with other jobs, two OpenMP threads per op ran 20 times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from trainer.algorithms.registry import ALGORITHM_CLASSES  # noqa: E402
from trainer.run import METRICS_FILE, run  # noqa: E402
from trainer.spec import JobSpec  # noqa: E402
from trainer.spec.cost_model import bound_speedup  # noqa: E402
from trainer.spec.executor import EXECUTORS  # noqa: E402

DEMO_SPEC = REPO / "examples" / "shapes-demo.json"
RESULTS = REPO / "bench" / "results"
RUNS_FILE = RESULTS / "learn-runs.json"
REFERENCE = ("flow_grpo", "native")
# The demo's fields every algorithm shares; the rest of the demo's algorithm section is Flow-GRPO's own.
SHARED_FIELDS = ("sampling_steps", "group_size", "prompts_per_step", "total_steps", "learning_rate", "cfg_scale")
OWN_FIELDS: dict[str, dict] = {
    "flow_grpo": {"noise_level": 0.7, "clip_range": 1e-4},
    "flow_grpo_fast": {"noise_level": 0.7, "clip_range": 1e-4, "window_size": 2},
    "dance_grpo": {"noise_level": 0.3, "train_timesteps": 2},
    "flash_grpo": {"clip_range": 1e-3},
}
# The forward algorithms' upstream rollouts sample without classifier-free guidance: NVlabs/DiffusionNFT
# config/nft.py (sample.guidance_scale 1.0), Flow-Factory examples/awm/lora/sd3_5/default.yaml (guidance_scale
# 1.0), Luo-Yihong/DGPO config/dgpo_wocfg.py (sample.guidance_scale 1.0). Their trainers train the conditional
# velocity only, as ours does (trainer/job.py forward_step).
UPSTREAM_ROLLOUT = {"cfg_scale": 1.0}
FORWARD = ("diffusion_nft", "awm", "dgpo")
TARGET_RATIO = 1 / 3
ROLLOUT_NOTE = [
    "Rollouts. Every row samples as the demo does: 8 steps, CFG 3.0, 4 prompts x 4 samples, so every row does "
    "the same rollout work per step and differs by its objective and executor. The forward-process rows run a "
    "second time with the one upstream rollout setting that makes them cheaper per step: no classifier-free "
    "guidance (cfg_scale 1.0: one forward pass per denoising step instead of two), which NVlabs/DiffusionNFT "
    "config/nft.py (sample.guidance_scale 1.0), Flow-Factory examples/awm/lora/sd3_5/default.yaml "
    "(guidance_scale 1.0) and Luo-Yihong/DGPO config/dgpo_wocfg.py (sample.guidance_scale 1.0) use. Their "
    "rewards are then those of CFG-free samples, measured against the same R.",
    "",
    "Not changed, and why: the sampling steps (upstream rollouts take 10 steps in DiffusionNFT and DGPO, 14 in "
    "Flow-Factory's AWM example, all more than the demo's 8, so no upstream count is cheaper); the solver "
    "(DiffusionNFT samples with a 2nd-order DPM solver, AWM and DGPO with the ODE; ours is the trainer's ODE "
    "step for the forward rows); the "
    "trained times K per sample, each algorithm's default (NFT: floor(0.99 T) = 7, as config/base.py's "
    "train.timestep_fraction 0.99; AWM: floor(0.9 T) = 7, as Flow-Factory's default when num_train_timesteps is "
    "null; DGPO: floor(0.6 T) = 4, its timestep_range 0.6). Flow-Factory's AWM example sets num_train_timesteps 6 "
    "of 14 steps (3 of 8 in proportion) and its DGPO example 4 of 10 (3 of 8): fewer trained times per step, a "
    "tuning of those examples rather than the algorithms' defaults, so bench-learn does not use them.",
]
WINDOW = 10
SCALE = 4  # the strip's pixels per model pixel
COLOURS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#000000",
    "#aec7e8",
    "#ffbb78",
]


def learning_spec(algorithm: str, executor: str, steps: int, seed: int, rollout: dict | None = None) -> dict:
    spec = json.loads(DEMO_SPEC.read_text())
    algo = {k: spec["algorithm"][k] for k in SHARED_FIELDS}
    algo.update({"name": algorithm, "total_steps": steps, **OWN_FIELDS.get(algorithm, {}), **(rollout or {})})
    spec.update(
        {"name": f"learn-{algorithm}-{executor}", "algorithm": algo, "seed": seed, "executor": {"name": executor}}
    )
    spec["samples"] = {**spec["samples"], "every": steps}
    spec["checkpoint"] = {"every": 0}
    return spec


def fastest_executor(algorithm: str, steps: int) -> str:
    """The executor with the largest analytical speedup among those that run the algorithm's spec."""
    speedups: dict[str, float] = {}
    for name in EXECUTORS:
        try:
            bound = bound_speedup(JobSpec.model_validate(learning_spec(algorithm, name, steps, 0)))
        except ValueError:
            continue
        if bound is not None:
            speedups[name] = bound
    return max(speedups, key=lambda name: speedups[name])


@dataclass
class Run:
    rewards: list[float]
    seconds: list[float]  # cumulative time/step at each step


@dataclass
class Method:
    algorithm: str
    executor: str
    rollout: dict = field(default_factory=dict)  # the algorithm fields that differ from the demo's rollout
    runs: list[Run] = field(default_factory=list)

    @property
    def rollout_label(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.rollout.items()) or "demo"

    @property
    def label(self) -> str:
        return f"{self.algorithm} / {self.executor}" + (f" ({self.rollout_label})" if self.rollout else "")


def first_reaching(run_: Run, target: float) -> int | None:
    """The index of the first step whose reward is at least the target."""
    return next((i for i, r in enumerate(run_.rewards) if r >= target), None)


def median_reached(values: list[float | None]) -> float | None:
    """The median with 'not reached' as infinitely late: None when half or more never reached."""
    middle = statistics.median(math.inf if v is None else v for v in values)
    return None if math.isinf(middle) else middle


def gain_in_standard_errors(runs: list[Run]) -> tuple[float, float | None]:
    """The last-10 minus first-10 mean reward, over its standard error: across seeds with two or more, else
    within the one run (Welch, from the step-to-step spread of each window)."""
    gains = [statistics.mean(r.rewards[-WINDOW:]) - statistics.mean(r.rewards[:WINDOW]) for r in runs]
    mean = statistics.mean(gains)
    if len(gains) >= 2:
        error = statistics.stdev(gains) / len(gains) ** 0.5
    else:
        first, last = runs[0].rewards[:WINDOW], runs[0].rewards[-WINDOW:]
        error = (statistics.variance(first) / len(first) + statistics.variance(last) / len(last)) ** 0.5
    return mean, mean / error if error else None


def target_of(reference: Method) -> float:
    return statistics.median(r.rewards[-1] for r in reference.runs)


def seconds_to(run_: Run, target: float) -> float | None:
    hit = first_reaching(run_, target)
    return None if hit is None else run_.seconds[hit]


def reference_seconds(reference: Run, target: float) -> float:
    """Flow-GRPO native's seconds to R in one seed; its whole run's where it never reached R (at least that
    long: the ratio to it is then an upper bound, which never flatters the method it divides)."""
    reached = seconds_to(reference, target)
    return reached if reached is not None else reference.seconds[-1]


def seed_ratios(method: Method, reference: Method, target: float) -> list[float | None]:
    """Per seed, the method's seconds to R over Flow-GRPO native's in the same seed (None: not reached)."""
    ratios: list[float | None] = []
    for run_, ref in zip(method.runs, reference.runs, strict=False):
        reached = seconds_to(run_, target)
        ratios.append(None if reached is None else reached / reference_seconds(ref, target))
    return ratios


def target_line(methods: list[Method], reference: Method, target: float) -> str:
    """Issue 28's target: a method reaching R in at most 1/3 of Flow-GRPO native's time, median of the seeds."""
    medians = {m.label: median_reached(seed_ratios(m, reference, target)) for m in methods[1:]}
    reached = {label: ratio for label, ratio in medians.items() if ratio is not None}
    seeds = len(reference.runs)
    if not reached:
        return (
            f"Target (a method at ≤ 1/3 of Flow-GRPO native's seconds to R, median of {seeds} seeds): not met; no "
            "method reached R in half or more of the seeds."
        )
    best = min(reached, key=lambda label: reached[label])
    verdict = "met" if reached[best] <= TARGET_RATIO else "not met"
    return (
        f"Target (a method at ≤ 1/3 of Flow-GRPO native's seconds to R, median of {seeds} seeds): {verdict}; "
        f"the lowest median ratio is {reached[best]:.2f}, {best}."
    )


def fmt(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(methods: list[Method], steps: int, rounds: int) -> list[str]:
    reference = methods[0]
    target = target_of(reference)
    ref_times = ", ".join(
        f"seed {s}: {fmt(seconds_to(r, target), 1)} s of {r.seconds[-1]:.1f} s" for s, r in enumerate(reference.runs)
    )
    seeds = range(len(reference.runs))
    lines = [
        f"`make bench-learn`: {steps} steps, seeds 0..{rounds - 1} (interleaved; the last maybe partial), "
        f"examples/shapes-demo.json (builtin:shapes, orange_background), on {os.cpu_count()} cores.",
        "",
        f"R = {target:.4f}: Flow-GRPO native's final reward (median over seeds of its step-{steps} reward/mean). "
        f"Flow-GRPO native's seconds to R, per seed ({ref_times}) divide each method's seconds to R in the same "
        "seed; where it never reached R its whole run's seconds divide (an upper bound on the ratio).",
        "",
        "| algorithm | executor | rollout | seeds reaching R | steps to R | seconds to R | "
        + " | ".join(f"ratio seed {s}" for s in seeds)
        + " | median ratio | final reward (last 10) | gain (last 10 - first 10) | gain/se |",
        "|---|---|---|---|---|---|" + "---|" * len(seeds) + "---|---|---|---|",
    ]
    for method in methods:
        hits = [first_reaching(r, target) for r in method.runs]
        steps_to = median_reached([h + 1 if h is not None else None for h in hits])
        seconds = median_reached([seconds_to(r, target) for r in method.runs])
        ratios = seed_ratios(method, reference, target)
        final = statistics.mean(statistics.mean(r.rewards[-WINDOW:]) for r in method.runs)
        gain, se_ratio = gain_in_standard_errors(method.runs)
        per_seed = " | ".join(fmt(ratio, 2) for ratio in ratios) + " |" * (len(seeds) - len(ratios))
        lines.append(
            f"| {method.algorithm} | {method.executor} | {method.rollout_label} "
            f"| {sum(h is not None for h in hits)}/{len(hits)} | {fmt(steps_to, 0)} | {fmt(seconds, 1)} "
            f"| {per_seed} | {fmt(median_reached(ratios), 2)} | {final:.4f} | {gain:+.4f} | {fmt(se_ratio, 1)} |"
        )
    return [*lines, "", target_line(methods, reference, target)]


def draw_seconds_plot(methods: list[Method], target: float, path: Path) -> None:
    """Reward against seconds, one line per algorithm and seed, R dashed; PIL only (no plotting library)."""
    width, height, left, right, top, bottom = 1100, 640, 70, 250, 30, 50
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    runs = [(i, r) for i, m in enumerate(methods) for r in m.runs]
    x_max = max(r.seconds[-1] for _, r in runs) or 1.0
    values = [v for _, r in runs for v in r.rewards] + [target]
    y_min, y_max = min(values), max(values)
    span = (y_max - y_min) or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        return (left + x / x_max * (width - left - right), top + (1 - (y - y_min) / span) * (height - top - bottom))

    draw.rectangle([left, top, width - right, height - bottom], outline="#999999")
    for k in range(6):
        x, y = x_max * k / 5, y_min + span * k / 5
        px, _ = at(x, y_min)
        _, py = at(0, y)
        draw.text((px - 10, height - bottom + 6), f"{x:.0f}", fill="black")
        draw.text((8, py - 6), f"{y:.2f}", fill="black")
    draw.text(((width - right) // 2, height - 20), "seconds (summed step times)", fill="black")
    draw.text((left, 8), "reward/mean against seconds; dashed: R, Flow-GRPO native's final reward", fill="black")
    _, ry = at(0, target)
    for x in range(left, width - right, 12):
        draw.line([(x, ry), (x + 6, ry)], fill="black", width=1)
    for i, run_ in runs:
        points = [at(s, r) for s, r in zip(run_.seconds, run_.rewards, strict=True)]
        draw.line(points, fill=COLOURS[i % len(COLOURS)], width=2)
    for i, method in enumerate(methods):
        y = top + 10 + i * 20
        draw.line([(width - right + 15, y + 6), (width - right + 40, y + 6)], fill=COLOURS[i % len(COLOURS)], width=3)
        draw.text((width - right + 46, y), method.label, fill="black")
    image.save(path)


def samples_row(out: Path, step: int) -> list[Image.Image]:
    return [Image.open(path).convert("RGB") for path in sorted((out / "samples" / f"step-{step}").glob("*.png"))]


def write_strip(rows: list[list[Image.Image]], path: Path) -> None:
    side = rows[0][0].width * SCALE
    strip = Image.new("RGB", (len(rows[0]) * (side + 2), len(rows) * (side + 2)), "white")
    for r, row in enumerate(rows):
        for c, image in enumerate(row):
            strip.paste(image.resize((side, side), Image.NEAREST), (c * (side + 2), r * (side + 2)))
    strip.save(path)


def train(method: Method, steps: int, seed: int, scratch: Path) -> Path:
    folder = scratch / f"{method.algorithm}-{method.executor}-{len(method.rollout)}-{seed}"
    folder.mkdir()
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(learning_spec(method.algorithm, method.executor, steps, seed, method.rollout)))
    run(spec_path, folder / "out", resume=False)
    lines = [json.loads(line) for line in (folder / "out" / METRICS_FILE).read_text().splitlines()]
    seconds, total = [], 0.0
    for line in lines:
        total += line["time/step"]
        seconds.append(total)
    method.runs.append(Run([line["reward/mean"] for line in lines], seconds))
    return folder / "out"


@dataclass
class Context:
    """How the run was made, written at the top of learn.md: command, UTC times and the host's load."""

    command: str
    started: str
    uptime_start: str
    steps: int
    rounds: int = 0
    uptime_now: str = ""
    now: str = ""

    def lines(self) -> list[str]:
        return [
            f"Command: `{self.command}`; started {self.started}, written {self.now}.",
            f"`uptime` at the start: `{self.uptime_start}`; at the last run's end: `{self.uptime_now}`.",
            "",
        ]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def bench_methods(algorithms: list[str], steps: int) -> list[Method]:
    """Flow-GRPO native first (the reference), then each algorithm under its fastest executor; a forward
    algorithm again with its upstream rollout."""
    methods = [Method(*REFERENCE)]
    for algorithm in algorithms:
        executor = fastest_executor(algorithm, steps)
        methods.append(Method(algorithm, executor))
        if algorithm in FORWARD:
            methods.append(Method(algorithm, executor, dict(UPSTREAM_ROLLOUT)))
    return methods


def save_runs(methods: list[Method], context: Context) -> None:
    record = {"context": asdict(context), "methods": [asdict(m) for m in methods]}
    RUNS_FILE.write_text(json.dumps(record, indent=1) + "\n")


def load_runs() -> tuple[list[Method], Context]:
    record = json.loads(RUNS_FILE.read_text())
    methods = [
        Method(m["algorithm"], m["executor"], m["rollout"], [Run(**r) for r in m["runs"]]) for m in record["methods"]
    ]
    return methods, Context(**record["context"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=json.loads(DEMO_SPEC.read_text())["algorithm"]["total_steps"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHM_CLASSES))
    parser.add_argument("--tabulate", action="store_true", help=f"write the table and plot again from {RUNS_FILE.name}")
    args = parser.parse_args()
    if args.tabulate:
        methods, context = load_runs()
        write_results([m for m in methods if m.runs], context)
        return
    torch.set_num_threads(1)
    methods = bench_methods(args.algorithms, args.steps)
    command = " ".join([Path(sys.executable).name, *sys.argv])
    context = Context(command, utc_now(), uptime(), args.steps)
    RESULTS.mkdir(exist_ok=True)
    strip: list[list[Image.Image]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in range(args.seeds):
            order = methods if seed % 2 == 0 else methods[::-1]
            for method in order:
                started = time.perf_counter()
                out = train(method, args.steps, seed, Path(scratch))
                print(f"seed {seed} {method.label}: {time.perf_counter() - started:.0f} s", flush=True)
                if seed == 0:  # the reference runs first: its step-0 samples are the base model's
                    strip += [samples_row(out, 0)] if method is methods[0] else [samples_row(out, args.steps)]
                    write_strip(strip, RESULTS / "learn-strip.png")
                context.rounds, context.now, context.uptime_now = seed + 1, utc_now(), uptime()
                save_runs(methods, context)
                write_results([m for m in methods if m.runs], context)


def write_results(methods: list[Method], context: Context) -> None:
    """The table, the plot and the strip's caption as they stand (after every run: a cut-short run keeps them)."""
    lines = context.lines() + table(methods, context.steps, context.rounds)
    draw_seconds_plot(methods, target_of(methods[0]), RESULTS / "learn-seconds.png")
    names = ", ".join(m.label for m in methods[1:])
    lines += [
        "",
        *ROLLOUT_NOTE,
        "",
        "Reward against seconds (one line per algorithm and seed; dashed: R):",
        "![reward against seconds](learn-seconds.png)",
        "",
        f"Before/after strip (row 1: step 0; then {names} at step {context.steps}, seed 0):",
        "![before and after](learn-strip.png)",
    ]
    (RESULTS / "learn.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
