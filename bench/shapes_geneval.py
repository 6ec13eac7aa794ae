"""``make bench-geneval``: does the shapes model learn GenEval-style composition from the ``geneval`` reward?

Trains the built-in shapes model (``builtin:shapes``, full fine-tuning) on ``builtin:shapes-geneval`` with the
``geneval`` reward alone (GenEval's presence, count, colour and position checks on the shape detector's objects,
trainer/rewards/geneval.py) on the CPU, under native, with the algorithm, guidance, learning rate, prompts and
group size the command names (default: examples/shapes-demo.json's Flow-GRPO, 4 prompts x 4 samples). It records
every step's training reward and its sub-scores (the rollout's images), the steps whose every prompt group had one
reward for all its samples (no advantage anywhere: a gradient of 0), and every ``--eval-every`` steps a held-out
evaluation: ODE samples (fixed seeds) of ``EVAL_PROMPTS`` held-out captions (``builtin:shapes-heldout``, never a
training prompt), scored by the same reward from the PNGs the run writes.

Each run is kept in ``bench/results/shapes-geneval-runs.json`` under its configuration's label (a new run of one
label replaces the old); ``bench/results/shapes-geneval.md`` (commands, times, tables) and the curve
``docs/images/shapes-geneval-curve.png`` show every kept run. ``--tabulate`` writes them again without training;
``--diagnose`` samples ``DIAGNOSED`` training captions from the base model (ODE, the demo's guidance) and tables what
the shape detector reads against what each caption asks (shape, colour, place), the reward's room to teach.
A benchmark, not a test: it asserts nothing.
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

from trainer.models.shapes_dataset import SHAPES, heldout_captions, training_captions  # noqa: E402
from trainer.rewards.geneval import geneval  # noqa: E402
from trainer.run import METRICS_FILE, run  # noqa: E402

RESULTS = REPO / "bench" / "results" / "shapes-geneval.md"
RUNS_FILE = REPO / "bench" / "results" / "shapes-geneval-runs.json"
DIAGNOSIS_FILE = REPO / "bench" / "results" / "shapes-geneval-diagnosis.json"
DIAGNOSED = 96  # training captions (every 15th) sampled from the base model for --diagnose
CURVE = REPO / "docs" / "images" / "shapes-geneval-curve.png"
EVAL_PROMPTS = 16  # held-out captions, every tenth of them (all sizes, colours, shapes and places among them)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#000000")
SUBS = ("presence", "count", "color", "position", "correct")


def prompt_file(shapes: tuple[str, ...], scratch: Path) -> str:
    """``builtin:shapes-geneval``, or, when the command names some of the shapes, a text file of the training
    captions asking for those (the reward knows every shapes caption's GenEval row either way): a circle caption's
    group is almost always tied on this model, so its samples teach nothing."""
    if set(shapes) == set(SHAPES):
        return "builtin:shapes-geneval"
    path = scratch / "prompts.txt"
    path.write_text("\n".join(text for text in training_captions() if text.split()[3] in shapes) + "\n")
    return str(path)


def geneval_spec(args: argparse.Namespace, seed: int, scratch: Path) -> dict[str, Any]:
    """examples/shapes-demo.json with the geneval reward on builtin:shapes-geneval (or the captions of the shapes
    the command names), held-out eval prompts, and the command's algorithm, guidance, learning rate, group size,
    SDE noise level and KL β (an algorithm other than Flow-GRPO drops the level and clip range, taking its own
    defaults)."""
    spec = json.loads((REPO / "examples" / "shapes-demo.json").read_text())
    spec["name"] = "shapes-geneval"
    algorithm = spec["algorithm"]
    if args.algorithm != algorithm["name"]:
        algorithm = {k: v for k, v in algorithm.items() if k not in ("noise_level", "clip_range")}
    spec["algorithm"] = algorithm | {
        "name": args.algorithm,
        "total_steps": args.steps,
        "learning_rate": args.learning_rate,
        "group_size": args.group_size,
        "prompts_per_step": args.prompts_per_step,
        "cfg_scale": args.cfg_scale,
    }
    if args.algorithm == "flow_grpo" and args.noise_level is not None:
        spec["algorithm"]["noise_level"] = args.noise_level
    if args.kl_beta is not None:
        spec["algorithm"]["kl_beta"] = args.kl_beta
    spec["reward"] = [{"name": "geneval", "weight": 1.0}]
    spec["prompts"] = {
        "source": prompt_file(args.shapes, scratch),
        "eval": heldout_captions()[:: len(heldout_captions()) // EVAL_PROMPTS][:EVAL_PROMPTS],
    }
    spec["samples"] = {"every": args.eval_every, "count": 2}
    spec["seed"] = seed
    return spec


def label_of(spec: dict[str, Any]) -> str:
    algo = spec["algorithm"]
    level = f", noise {algo['noise_level']:g}" if "noise_level" in algo and algo["noise_level"] != 0.7 else ""
    source = spec["prompts"]["source"]
    lines = [] if source.startswith("builtin:") else Path(source).read_text().splitlines()
    asked = {line.split()[3] for line in lines}
    subset = f", {'+'.join(sorted(asked))} only" if asked else ""
    kl = f", kl {algo['kl_beta']:g}" if algo.get("kl_beta") else ""
    return (
        f"{algo['name']}, cfg {algo['cfg_scale']:g}, lr {algo['learning_rate']:g}, "
        f"{algo['prompts_per_step']} prompts x {algo['group_size']}{level}{kl}{subset}"
    )


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


def train(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """One run: its per-step figures (reward, sub-scores, tied groups), held-out evaluations and seconds."""
    folder = scratch / f"seed-{spec['seed']}"
    folder.mkdir()
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    started = time.perf_counter()
    run(path, folder / "out", resume=False)
    seconds = time.perf_counter() - started
    metrics = [json.loads(line) for line in (folder / "out" / METRICS_FILE).read_text().splitlines()]
    keys = ["reward/geneval", *(f"reward/geneval/{name}" for name in SUBS)]
    steps = [
        {"step": m["step"], **{key: m[key] for key in keys}, "grad_zero": m.get("grad_norm") == 0.0} for m in metrics
    ]
    return {"steps": steps, "held_out": held_out_scores(folder / "out", spec), "seconds": seconds}


def running_mean(values: list[float], width: int) -> list[float]:
    return [statistics.fmean(values[max(0, i - width + 1) : i + 1]) for i in range(len(values))]


def plot(runs: list[dict[str, Any]]) -> None:
    """Reward (share of checks passed) and GenEval's strict ``correct`` rate against the step, per run: training
    (10-step running means, the raw reward faint) and held-out evaluations (circles); PIL only (no plotting
    library)."""
    width, height, left, right, top, bottom = 1200, 560, 60, 420, 40, 50
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    last = max(row["step"] for one in runs for row in one["steps"])

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
        "builtin:shapes on builtin:shapes-geneval, geneval reward, CPU: reward (thick) and GenEval's strict "
        "'correct' rate (thin), 10-step running means; circles: held-out",
        fill="black",
    )
    legend = []
    for index, one in enumerate(runs):
        colour = COLOURS[index % len(COLOURS)]
        steps = [row["step"] for row in one["steps"]]
        reward = [row["reward/geneval"] for row in one["steps"]]
        correct = [row["reward/geneval/correct"] for row in one["steps"]]
        faint = tuple(int(c + (255 - c) * 0.8) for c in ImageColor.getrgb(colour))
        draw.line([at(s, r) for s, r in zip(steps, reward, strict=True)], fill=faint, width=1)
        draw.line([at(s, r) for s, r in zip(steps, running_mean(reward, 10), strict=True)], fill=colour, width=3)
        draw.line([at(s, r) for s, r in zip(steps, running_mean(correct, 10), strict=True)], fill=colour, width=1)
        for step, values in one["held_out"].items():
            for value, radius in ((values["score"], 5), (values["correct"], 3)):
                x, y = at(float(step), value)
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], outline=colour, width=2)
        legend.append((colour, f"{one['label']}, seed {one['seed']}"))
    for row, (colour, label) in enumerate(legend):
        y = top + 10 + row * 20
        draw.line([(width - right + 12, y + 6), (width - right + 36, y + 6)], fill=colour, width=3)
        draw.text((width - right + 42, y), label, fill="black")
    CURVE.parent.mkdir(parents=True, exist_ok=True)
    image.save(CURVE)


def window_mean(rows: list[dict[str, Any]], key: str, first: bool, width: int = 10) -> float:
    values = [row[key] for row in rows]
    return statistics.fmean(values[:width] if first else values[-width:])


def markdown(runs: list[dict[str, Any]]) -> str:
    lines = [
        "# The shapes model learning GenEval-style composition (issue 31's acceptance)",
        "",
        "`make bench-geneval` (bench/shapes_geneval.py): the shapes model (`builtin:shapes`, full fine-tuning) on "
        "`builtin:shapes-geneval` with the `geneval` reward alone, under native, on this host's CPU (2 cores "
        "shared with other sessions), one thread, `nice -n 10`. Held-out: ODE samples of "
        f"{EVAL_PROMPTS} `builtin:shapes-heldout` captions x 2 seeds, re-scored from the run's PNGs.",
        "",
        "![reward curve](../../docs/images/shapes-geneval-curve.png)",
        "",
        "## Runs",
        "",
        "| configuration | seed | command | minutes | steps | steps with no gradient (every group tied) |",
        "|---|---|---|---|---|---|",
    ]
    for one in runs:
        tied = sum(row["grad_zero"] for row in one["steps"])
        lines.append(
            f"| {one['label']} | {one['seed']} | `{one['command']}` | {one['seconds'] / 60:.1f} | "
            f"{len(one['steps'])} | {tied} |"
        )
    lines += [
        "",
        "## First and last 10 steps (training reward, mean over the step's samples)",
        "",
        "| configuration | seed | reward first 10 | reward last 10 | correct first 10 | correct last 10 | "
        + " | ".join(f"{s} last 10" for s in SUBS[:-1])
        + " |",
        "|---|---|---|---|---|---|" + "---|" * (len(SUBS) - 1),
    ]
    for one in runs:
        rows = one["steps"]
        lines.append(
            f"| {one['label']} | {one['seed']} | {window_mean(rows, 'reward/geneval', True):.3f} | "
            f"{window_mean(rows, 'reward/geneval', False):.3f} | "
            f"{window_mean(rows, 'reward/geneval/correct', True):.3f} | "
            f"{window_mean(rows, 'reward/geneval/correct', False):.3f} | "
            + " | ".join(f"{window_mean(rows, f'reward/geneval/{s}', False):.3f}" for s in SUBS[:-1])
            + " |"
        )
    lines += ["", "## Held-out evaluations (ODE samples of held-out captions)", ""]
    lines += ["| configuration | seed | step | score | " + " | ".join(SUBS) + " |"]
    lines += ["|---|---|---|---|" + "---|" * len(SUBS)]
    for one in runs:
        for step, values in one["held_out"].items():
            subs = " | ".join(f"{values[s]:.3f}" for s in SUBS)
            lines.append(f"| {one['label']} | {one['seed']} | {step} | {values['score']:.3f} | {subs} |")
    if DIAGNOSIS_FILE.exists():
        found = json.loads(DIAGNOSIS_FILE.read_text())
        lines += [
            "",
            f"## What the detector reads on the base model's samples (`--diagnose`: {found['images']} training "
            "captions, ODE, CFG 3)",
            "",
            f"Objects found: {found['objects']} in {found['images']} images; the largest object's colour is the "
            f"caption's in {found['colour']}, its grid place in {found['place']}. Shape asked -> shape read:",
            "",
            "| asked -> read | images |",
            "|---|---|",
            *(f"| {pair} | {count} |" for pair, count in found["shapes"].items()),
        ]
        if "vae" in found:
            lines += [
                "",
                f"The shapes VAE's encode-decode of {sum(found['vae'].values())} of the dataset's own images "
                "(the best any policy over its latents can draw), read by the same detector:",
                "",
                "| asked -> read | images |",
                "|---|---|",
                *(f"| {pair} | {count} |" for pair, count in found["vae"].items()),
            ]
    lines += ["", "## Training reward, 10-step means", ""]
    lines += ["| steps | " + " | ".join(f"{one['label']}, seed {one['seed']}" for one in runs) + " |"]
    lines += ["|---|" + "---|" * len(runs)]
    for start in range(0, max(len(one["steps"]) for one in runs), 10):
        cells = [
            f"{statistics.fmean(r['reward/geneval'] for r in one['steps'][start : start + 10]):.3f}"
            if start < len(one["steps"])
            else "—"
            for one in runs
        ]
        lines.append(f"| {start + 1}-{start + 10} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def diagnose() -> dict[str, Any]:
    """What the shape detector reads on the base model's ODE samples of training captions: the largest object's
    shape against the caption's (counts), and how often its colour and grid place are the caption's."""
    from trainer.job import TrainingJob
    from trainer.rewards.shape_detector import detect_shapes
    from trainer.rollout import sample_ode
    from trainer.shapes_geneval_prompts import metadata_by_caption
    from trainer.spec import parse_spec

    spec = json.loads((REPO / "examples" / "shapes-demo.json").read_text()) | {"reward": [{"name": "geneval"}]}
    job = TrainingJob.build(parse_spec(spec), "sharded")
    captions = training_captions()[:: len(training_captions()) // DIAGNOSED][:DIAGNOSED]
    shapes: dict[str, int] = {}
    colour = place = objects = 0
    for start in range(0, len(captions), 16):
        batch = captions[start : start + 16]
        cond, uncond = job.conditioning(batch), job.unconditional(batch)
        for text, image in zip(
            batch, sample_ode(job.denoiser, job.policy, cond, uncond, list(range(len(batch)))), strict=True
        ):
            asked = metadata_by_caption()[text]["include"][0]
            found, _ = detect_shapes(image)
            objects += len(found)
            read = found[0].shape if found else "nothing"
            shapes[f"{asked['class']} -> {read}"] = shapes.get(f"{asked['class']} -> {read}", 0) + 1
            colour += bool(found) and found[0].color == asked["color"]
            place += bool(found) and found[0].place == asked["position"][0]
    return {
        "images": len(captions),
        "objects": objects,
        "shapes": dict(sorted(shapes.items())),
        "colour": colour,
        "place": place,
        "vae": vae_round_trip(),
    }


def vae_round_trip() -> dict[str, int]:
    """What the detector reads on the shapes VAE's encode-decode of ``DIAGNOSED`` dataset images (shape asked ->
    shape read): the best any policy over its latents can draw."""
    from diffusers import AutoencoderKL

    from trainer.models.builtin_shapes import COMMITTED_MODEL
    from trainer.models.shapes_dataset import random_batch
    from trainer.rewards.shape_detector import detect_shapes

    vae = AutoencoderKL.from_pretrained(COMMITTED_MODEL / "vae").eval()
    images, captions = random_batch(DIAGNOSED, torch.Generator().manual_seed(1))
    with torch.no_grad():
        decoded = (vae.decode(vae.encode(images * 2 - 1).latent_dist.mode()).sample + 1) / 2
    read: dict[str, int] = {}
    for text, image in zip(captions, decoded.clamp(0, 1), strict=True):
        found, _ = detect_shapes(image)
        pair = f"{text.split()[3]} -> {found[0].shape if found else 'nothing'}"
        read[pair] = read.get(pair, 0) + 1
    return dict(sorted(read.items()))


def kept_runs() -> list[dict[str, Any]]:
    return json.loads(RUNS_FILE.read_text()) if RUNS_FILE.exists() else []


def write(runs: list[dict[str, Any]]) -> None:
    RUNS_FILE.write_text(json.dumps(runs, indent=1))
    RESULTS.write_text(markdown(runs))
    plot(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="flow_grpo")
    parser.add_argument("--cfg-scale", type=float, default=3.0)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--noise-level", type=float, help="flow_grpo's SDE level a (the demo's 0.7 unless named)")
    parser.add_argument("--kl-beta", type=float, help="the KL penalty's β against the base model (default: none)")
    parser.add_argument(
        "--shapes", type=lambda text: tuple(text.split(",")), default=SHAPES, help="train on these shapes' captions"
    )
    parser.add_argument("--tabulate", action="store_true", help="write the table and curve from the kept runs")
    parser.add_argument("--diagnose", action="store_true", help="table what the detector reads on base samples")
    args = parser.parse_args()
    if not args.shapes or not set(args.shapes) <= set(SHAPES):
        parser.error(f"--shapes: a comma-separated list of {', '.join(SHAPES)}, not {','.join(args.shapes)!r}")
    if args.diagnose:
        DIAGNOSIS_FILE.write_text(json.dumps(diagnose(), indent=1))
    if args.tabulate or args.diagnose:
        write(kept_runs())
        return
    command = " ".join(["python bench/shapes_geneval.py", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="shapes-geneval-") as scratch:
        for seed in range(args.seeds):
            spec = geneval_spec(args, seed, Path(scratch))
            one = {"label": label_of(spec), "seed": seed, "command": command, **train(spec, Path(scratch))}
            runs = [r for r in kept_runs() if (r["label"], r["seed"]) != (one["label"], seed)] + [one]
            write(runs)  # the file read again: a run of another configuration may have finished meanwhile
            print(f"{one['label']}, seed {seed}: {one['seconds']:.0f} s, held-out {one['held_out']}", flush=True)


if __name__ == "__main__":
    main()
