"""builtin:shapes draws what its captions say: the shape's colour where the caption puts it, on its background.

Samples are drawn as the demo job draws its eval samples (deterministic ODE, the demo's steps and guidance),
then read by pixel statistics: the mean colour of a 3×3 window at the caption's grid place, and of the
image's border ring, must each be nearest (in RGB) to the palette colour the caption names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from trainer.models.builtin_shapes import ensure_builtin_shapes
from trainer.models.sd3 import SD3Family
from trainer.models.shapes_dataset import PALETTE, ShapeScene
from trainer.rewards.orange_background import background_color
from trainer.rollout import sample_ode
from trainer.sampling.denoising_step import DenoisingStep
from trainer.sampling.step_grid import StepGrid

REPO = Path(__file__).resolve().parents[2]
DEMO = json.loads((REPO / "examples" / "shapes-demo.json").read_text())["algorithm"]
SCENES = [
    ShapeScene("small", "red", "circle", 0, 0, "black"),
    ShapeScene("large", "blue", "square", 1, 1, "white"),
    ShapeScene("small", "yellow", "triangle", 2, 2, "blue"),
    ShapeScene("large", "white", "circle", 1, 0, "green"),
    ShapeScene("small", "green", "square", 0, 2, "yellow"),
    ShapeScene("large", "black", "triangle", 2, 1, "red"),
]
SEEDS = [0, 1]


def nearest_colour(rgb: torch.Tensor) -> str:
    names = list(PALETTE)
    distances = torch.linalg.vector_norm(torch.tensor([PALETTE[n] for n in names]) - rgb, dim=1)
    return names[int(distances.argmin())]


@pytest.fixture(scope="module")
def samples(sfumato_home: Path) -> torch.Tensor:
    family = SD3Family(ensure_builtin_shapes(), torch.device("cpu"), torch.float32)
    prompts = [scene.caption for scene in SCENES for _ in SEEDS]
    cond = family.encode_prompts(prompts)
    uncond = family.encode_prompts([""] * len(prompts))
    grid = StepGrid.build(family.sigmas(DEMO["sampling_steps"]), "flow_grpo", 0.0)  # the Euler steps use Δ alone
    seeds = [seed for _ in SCENES for seed in SEEDS]
    images = sample_ode(DenoisingStep(family, grid, DEMO["cfg_scale"]), family.transformer, cond, uncond, seeds)
    return images.reshape(len(SCENES), len(SEEDS), *images.shape[1:])


@pytest.mark.parametrize("index", range(len(SCENES)), ids=[scene.caption for scene in SCENES])
def test_shape_has_the_captions_colour_at_the_captions_place(samples: torch.Tensor, index: int) -> None:
    scene = SCENES[index]
    x, y = (round(value) for value in scene.centre())
    for image in samples[index]:
        window = image[:, y - 1 : y + 2, x - 1 : x + 2].mean(dim=(1, 2))
        assert nearest_colour(window) == scene.color


@pytest.mark.parametrize("index", range(len(SCENES)), ids=[scene.caption for scene in SCENES])
def test_background_has_the_captions_background_colour(samples: torch.Tensor, index: int) -> None:
    for ring in background_color(samples[index]):
        assert nearest_colour(ring) == SCENES[index].background
