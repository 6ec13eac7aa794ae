"""A short run of the README's first job (examples/shapes-demo.json) raises its reward by a clear margin.

The run is the demo shortened: its four eval prompts are the whole prompt set, all drawn every step, so a
step's mean reward does not move with which backgrounds it happened to draw; samples are off. The margin is
set from measured run-to-run spread: with seeds 0, 1, 2 the gain (mean reward of the last 3 steps minus the
first 3) was 0.183, 0.157, 0.155 (mean 0.165, standard deviation 0.016; first steps about 0.39-0.41), each run
15-16 CPU-seconds. MARGIN = 0.08 is about half the smallest gain and 5 standard deviations below the mean.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tests.trainer.conftest import read_metrics, write_spec
from trainer.run import run

REPO = Path(__file__).resolve().parents[2]
STEPS = 12
WINDOW = 3
MARGIN = 0.08


def test_shapes_demo_raises_orange_background_by_a_clear_margin(tmp_path: Path, sfumato_home: Path) -> None:
    spec = json.loads((REPO / "examples" / "shapes-demo.json").read_text())
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(spec["prompts"]["eval"]) + "\n")
    spec["prompts"]["source"] = str(prompts)
    spec["algorithm"].update(total_steps=STEPS, prompts_per_step=len(spec["prompts"]["eval"]), group_size=4)
    spec["samples"] = {"count": 0}
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    rewards = [step["reward/mean"] for step in read_metrics(tmp_path / "out")]
    gain = statistics.mean(rewards[-WINDOW:]) - statistics.mean(rewards[:WINDOW])
    assert gain > MARGIN, f"reward per step: {rewards}"
