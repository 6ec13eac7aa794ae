"""``make bench-learn``: does each algorithm make the shapes model draw what the reward asks for?

Runs the README's first job (``examples/shapes-demo.json``: ``builtin:shapes`` trained on
``orange_background``) once per algorithm, and prints the mean training reward of the first and
last 10 steps with the gain in units of its standard error (from the step-to-step spread of each
half). It then draws a before/after strip, ``bench/results/learn-strip.png``: the demo's eval
prompts with the same seeds, on the first row from the base model (step 0), on each following row
from one algorithm's policy at its last step (the run's own eval samples). The table goes to
``bench/results/learn.md``. A benchmark, not a test: it asserts nothing and takes minutes on a CPU.

Each algorithm keeps the demo's spec and changes only the fields that are its own (the papers'
SDE levels and clip ranges, DanceGRPO's trained steps, Flow-GRPO-Fast's window).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# One thread: on a CPU shared with other jobs, two OpenMP threads per op ran 20 times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from trainer.run import METRICS_FILE, run  # noqa: E402

DEMO_SPEC = REPO / "examples" / "shapes-demo.json"
RESULTS = REPO / "bench" / "results"
ALGORITHM_FIELDS: dict[str, dict] = {
    "flow_grpo": {},
    "dance_grpo": {"noise_level": 0.3, "train_timesteps": 2},
    "flash_grpo": {"clip_range": 1e-3},
    "flow_grpo_fast": {"window_size": 2},
}
WINDOW = 10
SCALE = 4  # the strip's pixels per model pixel


def learning_spec(algorithm: str, steps: int, seed: int) -> dict:
    spec = json.loads(DEMO_SPEC.read_text())
    algo = {k: v for k, v in spec["algorithm"].items() if k not in ("noise_level", "clip_range")}
    algo.update({"name": algorithm, "total_steps": steps, **ALGORITHM_FIELDS[algorithm]})
    if algorithm in ("flow_grpo", "flow_grpo_fast"):
        algo.update({k: spec["algorithm"][k] for k in ("noise_level", "clip_range") if k in spec["algorithm"]})
    spec.update({"name": f"learn-{algorithm}", "algorithm": algo, "seed": seed})
    spec["samples"] = {**spec["samples"], "every": steps}
    spec["checkpoint"] = {"every": 0}
    return spec


def gain_in_standard_errors(first: list[float], last: list[float]) -> float:
    error = (statistics.variance(first) / len(first) + statistics.variance(last) / len(last)) ** 0.5
    return (statistics.mean(last) - statistics.mean(first)) / error


def base_row(spec: dict) -> list[Image.Image]:
    """The eval samples of the base model, drawn exactly as the run draws its eval samples (step 0)."""
    from trainer.models.loading import load_family
    from trainer.rollout import sample_ode
    from trainer.spec import JobSpec

    job = JobSpec.model_validate(spec)
    job.model.finetune = "full"  # the base weights, without an adapter
    family = load_family(job.model, torch.device("cpu"))
    count = job.samples.count
    prompts = [p for p in job.prompts.eval for _ in range(count)]
    seeds = [s for _ in job.prompts.eval for s in range(count)]
    cond = family.encode_prompts(prompts)
    uncond = family.encode_prompts([""] * len(prompts)) if job.algorithm.cfg_scale > 1 else None
    sigmas = family.sigmas(job.algorithm.sampling_steps, job.algorithm.shift)
    images = sample_ode(family, family.transformer, sigmas, cond, uncond, job.algorithm.cfg_scale, seeds)
    arrays = (images.permute(0, 2, 3, 1) * 255).round().to(torch.uint8).numpy()
    return [Image.fromarray(array) for array in arrays]


def last_row(out: Path, steps: int) -> list[Image.Image]:
    return [Image.open(path).convert("RGB") for path in sorted((out / "samples" / f"step-{steps}").glob("*.png"))]


def write_strip(rows: list[list[Image.Image]], path: Path) -> None:
    side = rows[0][0].width * SCALE
    strip = Image.new("RGB", (len(rows[0]) * (side + 2), len(rows) * (side + 2)), "white")
    for r, row in enumerate(rows):
        for c, image in enumerate(row):
            strip.paste(image.resize((side, side), Image.NEAREST), (c * (side + 2), r * (side + 2)))
    strip.save(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=json.loads(DEMO_SPEC.read_text())["algorithm"]["total_steps"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHM_FIELDS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, strip = [], [base_row(learning_spec("flow_grpo", args.steps, args.seed))]
    with tempfile.TemporaryDirectory() as scratch:
        for algorithm in args.algorithms:
            folder = Path(scratch) / algorithm
            folder.mkdir()
            spec_path = folder / "spec.json"
            spec_path.write_text(json.dumps(learning_spec(algorithm, args.steps, args.seed)))
            started = time.perf_counter()
            run(spec_path, folder / "out", resume=False)
            seconds = time.perf_counter() - started
            lines = (folder / "out" / METRICS_FILE).read_text().splitlines()
            rewards = [json.loads(line)["reward/mean"] for line in lines]
            rows.append((algorithm, rewards[:WINDOW], rewards[-WINDOW:], seconds))
            strip.append(last_row(folder / "out", args.steps))
    RESULTS.mkdir(exist_ok=True)
    write_strip(strip, RESULTS / "learn-strip.png")
    table = [
        f"`make bench-learn` ({args.steps} steps, seed {args.seed}): examples/shapes-demo.json, orange_background",
        "",
        "| algorithm | first 10 | last 10 | gain | gain/se | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for algorithm, first, last, seconds in rows:
        before, after = statistics.mean(first), statistics.mean(last)
        ratio = gain_in_standard_errors(first, last)
        gain = after - before
        table.append(f"| {algorithm} | {before:.4f} | {after:.4f} | {gain:+.4f} | {ratio:.1f} | {seconds:.0f} |")
    rows_named = ", ".join(args.algorithms)
    table += ["", f"Before/after strip (row 1: step 0; then {rows_named} at step {args.steps}):"]
    table.append("![before and after](learn-strip.png)")
    (RESULTS / "learn.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
