"""The playground grid through the whole platform: `sfumato playground JOB --prompt ... --seed ... --wait` on a tiny
job of the live platform, trained for two steps, queues a playground job, the real worker runs the trainer's task
on the job's final model, and its grid has a row per prompt x seed with the base model's images beside the trained
ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from client_harness import TINY_YAML, cli_env, run_cli
from PIL import Image
from platform_harness import Platform
from playground_images import base_model_pixels, pixels

from sfumato import Client
from sfumato.specfile import read_spec_file
from trainer.spec.model import ModelSpec
from trainer.spec.playground_task import SamplerSettings

PROMPTS = ["a red apple", "a blue square"]
SEEDS = [0, 7]
# Two steps at a learning rate high enough that the LoRA moves the tiny model's images visibly.
LEARNING_RATE = 0.05
STEPS = 2


def trained_job(platform: Platform, folder: Path) -> int:
    spec_file = folder / "tiny.yaml"
    spec_file.write_text(TINY_YAML)
    spec = read_spec_file(spec_file, {"TINY_STEPS": str(STEPS)})
    spec["name"], spec["algorithm"]["learning_rate"] = "tiny-playground", LEARNING_RATE
    with Client(platform.url, platform.token) as client:
        job = client.wait(client.submit(spec).id, timeout=300, interval=0.5)
    assert job.status == "succeeded", platform.output()
    return job.id


def test_the_grid_has_prompt_by_seed_rows_with_the_base_models_images_beside_the_trained_ones(
    live_platform: Platform, tiny_model: Path, tmp_path: Path
) -> None:
    job_id = trained_job(live_platform, tmp_path)
    args = [f"--prompt={p}" for p in PROMPTS] + [f"--seed={s}" for s in SEEDS]
    argv = ["playground", str(job_id), *args, "--wait", "--timeout", "300", "--json"]
    result = run_cli(cli_env(live_platform, tmp_path), *argv, timeout=320)
    assert result.returncode == 0, f"{result.stderr}\n{live_platform.output()}"
    run = json.loads(result.stdout)
    assert (run["status"], run["prompts"], run["seeds"], run["step"]) == ("succeeded", PROMPTS, SEEDS, STEPS)

    folder = Path(live_platform.env["SFUMATO_HOME"]) / "artifacts" / "jobs" / str(run["job_id"]) / "playground"
    manifest = json.loads((folder / "images" / "manifest.json").read_text())
    cells = [(i["prompt"], i["seed"], i["column"]) for i in manifest["images"]]
    assert cells == [(p, s, c) for p in PROMPTS for s in SEEDS for c in ("base", "trained")]
    single = Image.open(folder / "images" / manifest["images"][0]["file"])
    assert Image.open(folder / "grid.png").height > len(cells) // 2 * single.height

    job = Client(live_platform.url, live_platform.token).job(job_id)
    model = ModelSpec.model_validate({**job.spec["model"], "path": str(tiny_model)})
    alone = base_model_pixels(model, PROMPTS, SEEDS, SamplerSettings.model_validate(run["sampler"]))
    moved = []
    for p, _ in enumerate(PROMPTS):
        for seed in SEEDS:
            base = pixels((folder / "images" / f"base-prompt{p}-seed{seed}.png").read_bytes())
            trained = pixels((folder / "images" / f"trained-prompt{p}-seed{seed}.png").read_bytes())
            assert np.abs(base - alone[p, seed]).max() <= 1  # PNG rounding of a last-bit difference
            moved.append(int(np.abs(trained - base).max()))
    print(f"largest pixel change of the trained images over the base ones (0-255): {moved}")
    assert min(moved) > 4
