"""The playground task (`python -m trainer task` with a playground task) on the tiny model: its grid has a row per
prompt × seed and the columns base | trained; the base images are the base model's own, the trained ones move."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.playground_images import base_model_pixels, pixels
from tests.trainer.conftest import write_spec
from tests.trainer.test_exports import spec_data, trained
from trainer.spec import parse_spec
from trainer.spec.playground_task import SamplerSettings

PROMPTS = ["a red apple", "a blue square"]
SEEDS = [0, 5]
SAMPLER = {"steps": 6, "guidance_scale": 3.0}


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """A checkpoint of a source job (#5) and a playground task job (#6) run on it, as a worker lays them out."""
    from trainer.__main__ import main

    root = tmp_path_factory.mktemp("playground") / "jobs"
    spec = spec_data("sd3")
    _, checkpoint = trained(parse_spec(spec), root / "5")
    source = {"job_id": 5, "artifact_id": 1, "step": 3, "path": checkpoint.relative_to(root / "5").as_posix()}
    task = {"kind": "playground", "source": source, "prompts": PROMPTS, "seeds": SEEDS, "sampler": SAMPLER}
    (root / "task.json").write_text(json.dumps(task))
    argv = ["task", "--spec", str(write_spec(root / "spec.json", spec)), "--task", str(root / "task.json")]
    assert main([*argv, "--output-dir", str(root / "6")]) == 0
    return root / "6" / "playground"


def test_the_grid_has_a_row_per_prompt_and_seed_and_a_base_and_a_trained_column(playground: Path) -> None:
    from trainer.tasks.playground_task import HEADER_PX, LABEL_WIDTH_PX, MIN_CELL_PX, PAD_PX

    manifest = json.loads((playground / "images" / "manifest.json").read_text())
    cells = [(i["prompt"], i["seed"], i["column"]) for i in manifest["images"]]
    assert cells == [(p, s, c) for p in PROMPTS for s in SEEDS for c in ("base", "trained")]
    grid = Image.open(playground / "grid.png")
    single = Image.open(playground / "images" / manifest["images"][0]["file"])
    rows = len(PROMPTS) * len(SEEDS)
    scale = -(-MIN_CELL_PX // single.height)
    assert grid.height == HEADER_PX + rows * (single.height * scale + PAD_PX)
    assert grid.width == LABEL_WIDTH_PX + 2 * (single.width * scale + PAD_PX)


def test_the_base_column_is_the_base_model_alone_and_the_trained_column_differs(playground: Path) -> None:
    model = parse_spec(spec_data("sd3")).model
    alone = base_model_pixels(model, PROMPTS, SEEDS, SamplerSettings(**SAMPLER))
    for p, _ in enumerate(PROMPTS):
        for seed in SEEDS:
            base = pixels((playground / "images" / f"base-prompt{p}-seed{seed}.png").read_bytes())
            trained_image = pixels((playground / "images" / f"trained-prompt{p}-seed{seed}.png").read_bytes())
            assert np.abs(base - alone[p, seed]).max() <= 1  # PNG rounding of a last-bit difference
            assert np.abs(trained_image - base).max() > 8
