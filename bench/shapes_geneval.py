"""``make bench-geneval``: does the shapes model learn GenEval-style composition from the ``geneval`` reward?

Trains the built-in shapes model (``builtin:shapes``, full fine-tuning) on ``builtin:shapes-geneval`` with the
``geneval`` reward alone (GenEval's presence, count, colour and position checks on the shape detector's objects,
trainer/rewards/geneval.py) under Flow-GRPO and native, on the CPU, for each seed. It records every step's
training reward and its sub-scores (the rollout's images, the SDE's), and every ``--eval-every`` steps a held-out
evaluation: ODE samples (fixed seeds) of ``EVAL_PROMPTS`` held-out captions (``builtin:shapes-heldout``, never a
training prompt), scored by the same reward from the PNGs the run writes.

It writes ``bench/results/shapes-geneval.md`` (the command, the time, the spec, per-step table) and the curve
``docs/images/shapes-geneval-curve.png`` (training reward per step, its 10-step running mean, the held-out
evaluations, and GenEval's strict ``correct`` rate). A benchmark, not a test: it asserts nothing.
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# One thread: on a CPU shared with other jobs, two OpenMP threads per op ran 20 times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageColor, ImageDraw  # noqa: E402

from trainer.models.shapes_dataset import heldout_captions  # noqa: E402
from trainer.rewards.geneval import geneval  # noqa: E402
from trainer.run import METRICS_FILE, run  # noqa: E402

RESULTS = REPO / "bench" / "results" / "shapes-geneval.md"
CURVE = REPO / "docs" / "images" / "shapes-geneval-curve.png"
EVAL_PROMPTS = 16  # held-out captions, every tenth of them (all sizes, colours, shapes and places among them)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
SUBS = ("presence", "count", "color", "position", "correct")


def geneval_spec(steps: int, seed: int, eval_every: int, learning_rate: float, group_size: int) -> dict[str, Any]:
    """examples/shapes-demo.json with the geneval reward on builtin:shapes-geneval and held-out eval prompts."""
    spec = json.loads((REPO / "examples" / "shapes-demo.json").read_text())
    spec["name"] = "shapes-geneval"
    spec["algorithm"] |= {"total_steps": steps, "learning_rate": learning_rate, "group_size": group_size}
    spec["reward"] = [{"name": "geneval", "weight": 1.0}]
    spec["prompts"] = {
        "source": "builtin:shapes-geneval",
        "eval": heldout_captions()[:: len(heldout_captions()) // EVAL_PROMPTS][:EVAL_PROMPTS],
    }
    spec["samples"] = {"every": eval_every, "count": 2}
    spec["seed"] = seed
    return spec


def held_out_scores(output: Path, spec: dict[str, Any]) -> dict[int, dict[str, float]]:
    """Each evaluated step's mean geneval score and sub-scores over its eval PNGs (prompt-major, as written)."""
    prompts = [p for p in spec["prompts"]["eval"] for _ in range(spec["samples"]["count"])]
    found = {}
    for folder in (output / "samples").glob("step-*"):
        files = sorted(folder.glob("*.png"))
        if len(files) != len(prompts):
            continue
        pixels = np.stack([np.asarray(Image.open(path).convert("RGB")) for path in files])
        images = torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 255
        scores, subs = geneval(images, prompts)
        found[int(folder.name.split("-")[1])] = {
            "score": float(scores.mean()),
            **{name: float(subs[name].mean()) for name in SUBS},
        }
    return dict(sorted(found.items()))


def train(spec: dict[str, Any], scratch: Path) -> tuple[list[dict[str, float]], dict[int, dict[str, float]], float]:
    folder = scratch / f"seed-{spec['seed']}"
    folder.mkdir()
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    started = time.perf_counter()
    run(path, folder / "out", resume=False)
    seconds = time.perf_counter() - started
    metrics = [json.loads(line) for line in (folder / "out" / METRICS_FILE).read_text().splitlines()]
    return metrics, held_out_scores(folder / "out", spec), seconds


def running_mean(values: list[float], width: int) -> list[float]:
    return [statistics.fmean(values[max(0, i - width + 1) : i + 1]) for i in range(len(values))]


def plot(runs: list[dict[str, Any]]) -> None:
    """Reward (share of checks passed) and GenEval's strict ``correct`` rate against the step, per seed: training
    (10-step running mean, the raw steps faint) and held-out evaluations (dots); PIL only (no plotting library)."""
    width, height, left, right, top, bottom = 1100, 560, 60, 300, 40, 50
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    last = max(m["step"] for one in runs for m in one["metrics"])

    def at(step: float, value: float) -> tuple[float, float]:
        return (left + step / last * (width - left - right), top + (1 - value) * (height - top - bottom))

    draw.rectangle([left, top, width - right, height - bottom], outline="#999999")
    for k in range(6):
        x, y = at(last * k / 5, k / 5)
        draw.line([(left, y), (width - right, y)], fill="#eeeeee")
        draw.text((x - 10, height - bottom + 6), f"{last * k / 5:.0f}", fill="black")
        draw.text((20, y - 6), f"{k / 5:.1f}", fill="black")
    draw.text(((width - right) // 2 - 20, height - 22), "training step", fill="black")
    draw.text(
        (left, 10),
        "builtin:shapes on builtin:shapes-geneval, geneval reward, Flow-GRPO native, CPU: reward (thick) and "
        "GenEval's strict 'correct' rate (thin)",
        fill="black",
    )
    legend = []
    for index, one in enumerate(runs):
        colour = COLOURS[index % len(COLOURS)]
        steps = [m["step"] for m in one["metrics"]]
        reward = [m["reward/geneval"] for m in one["metrics"]]
        correct = [m["reward/geneval/correct"] for m in one["metrics"]]
        faint = tuple(int(c + (255 - c) * 0.75) for c in ImageColor.getrgb(colour))
        draw.line([at(s, r) for s, r in zip(steps, reward, strict=True)], fill=faint, width=1)
        draw.line([at(s, r) for s, r in zip(steps, running_mean(reward, 10), strict=True)], fill=colour, width=3)
        draw.line([at(s, r) for s, r in zip(steps, running_mean(correct, 10), strict=True)], fill=colour, width=1)
        for step, values in one["held_out"].items():
            for value, radius in ((values["score"], 5), (values["correct"], 3)):
                x, y = at(step, value)
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], outline=colour, width=2)
        legend += [
            (colour, 3, f"seed {one['seed']}: training reward (10-step mean)"),
            (colour, 1, f"seed {one['seed']}: training correct (10-step mean)"),
            (colour, 0, f"seed {one['seed']}: held-out reward / correct (ODE)"),
        ]
    for row, (colour, line, label) in enumerate(legend):
        y = top + 10 + row * 20
        if line:
            draw.line([(width - right + 12, y + 6), (width - right + 36, y + 6)], fill=colour, width=line)
        else:
            draw.ellipse([width - right + 19, y + 1, width - right + 29, y + 11], outline=colour, width=2)
        draw.text((width - right + 42, y), label, fill="black")
    CURVE.parent.mkdir(parents=True, exist_ok=True)
    image.save(CURVE)


def window_mean(metrics: list[dict[str, float]], key: str, first: bool, width: int = 10) -> float:
    values = [m[key] for m in metrics]
    return statistics.fmean(values[:width] if first else values[-width:])


def markdown(runs: list[dict[str, Any]], command: str, spec: dict[str, Any], seconds: float) -> str:
    lines = [
        "# The shapes model learning GenEval-style composition (issue 31's acceptance)",
        "",
        f"Command: `{command}` (bench/shapes_geneval.py), {seconds / 60:.1f} min in all on this host's CPU "
        f"(2 cores shared with other sessions), one thread, `nice -n 10`.",
        "",
        "Spec (examples/shapes-demo.json with the geneval reward): "
        f"`{json.dumps({k: spec[k] for k in ('model', 'algorithm', 'executor', 'reward')})}`; "
        f"prompts `builtin:shapes-geneval`; held-out evaluation every {spec['samples']['every']} steps on "
        f"{len(spec['prompts']['eval'])} `builtin:shapes-heldout` captions x {spec['samples']['count']} seeds (ODE).",
        "",
        "![reward curve](../../docs/images/shapes-geneval-curve.png)",
        "",
        "## First and last 10 steps (training reward, mean over the step's samples)",
        "",
        "| seed | seconds | reward first 10 | reward last 10 | correct first 10 | correct last 10 | "
        + " | ".join(f"{s} last 10" for s in SUBS[:-1])
        + " |",
        "|---|---|---|---|---|---|" + "---|" * (len(SUBS) - 1),
    ]
    for one in runs:
        m = one["metrics"]
        lines.append(
            f"| {one['seed']} | {one['seconds']:.0f} | {window_mean(m, 'reward/geneval', True):.3f} | "
            f"{window_mean(m, 'reward/geneval', False):.3f} | {window_mean(m, 'reward/geneval/correct', True):.3f} | "
            f"{window_mean(m, 'reward/geneval/correct', False):.3f} | "
            + " | ".join(f"{window_mean(m, f'reward/geneval/{s}', False):.3f}" for s in SUBS[:-1])
            + " |"
        )
    lines += ["", "## Held-out evaluations (ODE samples of held-out captions)", ""]
    lines += ["| seed | step | score | " + " | ".join(SUBS) + " |", "|---|---|---|" + "---|" * len(SUBS)]
    for one in runs:
        for step, values in one["held_out"].items():
            subs = " | ".join(f"{values[s]:.3f}" for s in SUBS)
            lines.append(f"| {one['seed']} | {step} | {values['score']:.3f} | {subs} |")
    lines += ["", "## Every step (training reward)", ""]
    lines += ["| step | " + " | ".join(f"seed {one['seed']}" for one in runs) + " |", "|---|" + "---|" * len(runs)]
    for index in range(max(len(one["metrics"]) for one in runs)):
        cells = [
            f"{one['metrics'][index]['reward/geneval']:.3f}" if index < len(one["metrics"]) else "—" for one in runs
        ]
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--group-size", type=int, default=4)
    args = parser.parse_args()
    command = "python bench/shapes_geneval.py " + " ".join(sys.argv[1:])
    started = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory(prefix="shapes-geneval-") as scratch:
        for seed in range(args.seeds):
            spec = geneval_spec(args.steps, seed, args.eval_every, args.learning_rate, args.group_size)
            metrics, held_out, seconds = train(spec, Path(scratch))
            runs.append({"seed": seed, "metrics": metrics, "held_out": held_out, "seconds": seconds})
            RESULTS.write_text(markdown(runs, command.strip(), spec, time.perf_counter() - started))
            plot(runs)
            print(f"seed {seed}: {seconds:.0f} s, held-out {held_out}", flush=True)


if __name__ == "__main__":
    main()
