"""A playground job: each prompt × seed drawn by the base model and by the source checkpoint with one sampler, and
the grid of them (rows prompt × seed, columns base | trained), registered as the job's `playground` artifacts: `grid`
(one PNG) and `images` (the single images and a manifest naming each one's prompt, seed and column).

The sampler is the trainer's eval sampler (`sample_ode`: Euler steps on the checkpoint's σ grid, x_0 from the
seed's eval stream), so with the job's own steps and guidance a trained image is the job's eval sample for that
prompt and seed, and a base one its eval sample before the first step. Both models are held in fp32 on the job's
device, one after the other.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch
from PIL import Image, ImageDraw, ImageFont

from trainer.export.trained_model import base_family, trained_family
from trainer.models.base import ModelFamily
from trainer.reporting.reporter import Reporter
from trainer.rollout import sample_ode
from trainer.run import to_png
from trainer.sampling.denoising_step import DenoisingStep
from trainer.sampling.step_grid import StepGrid
from trainer.spec import JobSpec
from trainer.spec.playground_task import PlaygroundTask, SamplerSettings
from trainer.tasks.source_checkpoint import checkpoint_folder

PLAYGROUND_DIR = "playground"
GRID_NAME = "grid.png"
IMAGES_DIR = "images"
MANIFEST_NAME = "manifest.json"
COLUMNS = ("base", "trained")
# The grid draws each cell at least this tall (nearest-neighbour upscaling), so a tiny model's images stay visible
# beside their labels; the single images keep their own size.
MIN_CELL_PX = 160
LABEL_WIDTH_PX = 280
HEADER_PX = 28
PAD_PX = 6
PROMPT_LINE_CHARS = 38
LABEL_FONT_PX = 15


def draw(
    family: ModelFamily, device: torch.device, prompts: list[str], seeds: list[int], sampler: SamplerSettings
) -> list[list[bytes]]:
    """PNGs [prompt][seed] of this family's transformer (on ``device``) under the ODE sampler; one batch per
    prompt, each prompt encoded alone as training encodes it."""
    sigmas = family.sigmas(sampler.steps, sampler.shift)
    # The ODE step reads Δσ alone; the SDE kind and level only fill the grid's unused stochastic tables.
    grid = StepGrid.build(sigmas, "flow_grpo", 0.7, device)
    denoiser = DenoisingStep(family, grid, sampler.guidance_scale)
    uncond_one = family.encode_prompts([""]).to(device) if sampler.guidance_scale > 1.0 else None
    drawn = []
    with torch.no_grad():
        for prompt in prompts:
            cond = family.encode_prompts([prompt]).to(device).repeat_to(len(seeds))
            uncond = None if uncond_one is None else uncond_one.repeat_to(len(seeds))
            images = sample_ode(denoiser, family.transformer, cond, uncond, seeds)
            drawn.append([to_png(image) for image in images])
    return drawn


def _labels(prompt: str, seed: int) -> list[str]:
    words, lines, line = prompt.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > PROMPT_LINE_CHARS:
            lines.append(line)
            line = ""
        line = f"{line} {word}".strip()
    lines.append(line)
    return [*lines[:6], f"seed {seed}"]


def grid_png(rows: list[tuple[str, int, bytes, bytes]], step: int) -> bytes:
    """One labelled image: a header (base | trained at step N), then a row per (prompt, seed, base, trained)."""
    images = [(Image.open(io.BytesIO(base)), Image.open(io.BytesIO(trained))) for _, _, base, trained in rows]
    width, height = images[0][0].size
    scale = max(1, -(-MIN_CELL_PX // height))
    cell_w, cell_h = width * scale, height * scale
    total_w = LABEL_WIDTH_PX + 2 * (cell_w + PAD_PX)
    total_h = HEADER_PX + len(rows) * (cell_h + PAD_PX)
    canvas = Image.new("RGB", (total_w, total_h), "white")
    pen = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=LABEL_FONT_PX)
    for column, title in enumerate(("base", f"trained (step {step})")):
        pen.text((LABEL_WIDTH_PX + column * (cell_w + PAD_PX) + 4, 6), title, fill="black", font=font)
    for index, ((prompt, seed, _, _), pair) in enumerate(zip(rows, images, strict=True)):
        top = HEADER_PX + index * (cell_h + PAD_PX)
        pen.multiline_text((6, top + 4), "\n".join(_labels(prompt, seed)), fill="black", font=font)
        for column, image in enumerate(pair):
            left = LABEL_WIDTH_PX + column * (cell_w + PAD_PX)
            canvas.paste(image.convert("RGB").resize((cell_w, cell_h), Image.Resampling.NEAREST), (left, top))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def _device(spec: JobSpec) -> torch.device:
    return torch.device("cuda") if spec.resources.device_type == "cuda" else torch.device("cpu")


def run(spec: JobSpec, task: PlaygroundTask, output_dir: Path, reporter: Reporter | None) -> None:
    checkpoint = checkpoint_folder(task.source, output_dir)
    device, step = _device(spec), task.source.step
    base = draw(base_family(spec, device), device, task.prompts, task.seeds, task.sampler)
    trained = draw(trained_family(spec, checkpoint, device), device, task.prompts, task.seeds, task.sampler)
    folder = output_dir / PLAYGROUND_DIR
    (folder / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    rows, manifest = [], []
    for p, prompt in enumerate(task.prompts):
        for s, seed in enumerate(task.seeds):
            rows.append((prompt, seed, base[p][s], trained[p][s]))
            for column, png in zip(COLUMNS, (base[p][s], trained[p][s]), strict=True):
                name = f"{column}-prompt{p}-seed{seed}.png"
                (folder / IMAGES_DIR / name).write_bytes(png)
                manifest.append({"prompt": prompt, "seed": seed, "column": column, "file": name})
    (folder / IMAGES_DIR / MANIFEST_NAME).write_text(json.dumps({"step": step, "images": manifest}, indent=2))
    (folder / GRID_NAME).write_bytes(grid_png(rows, step))
    print(f"playground grid of {len(rows)} rows (base | trained at step {step}) written to {folder / GRID_NAME}")
    if reporter is not None:
        reporter.artifact("playground", "images", step, f"{PLAYGROUND_DIR}/{IMAGES_DIR}")
        reporter.artifact("playground", "grid", step, f"{PLAYGROUND_DIR}/{GRID_NAME}")
