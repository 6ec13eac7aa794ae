"""``make bench-learn``: does each algorithm actually learn on the tiny model?

Trains the built-in tiny model on ``prompt_color_match`` with flow_grpo, dance_grpo and
flash_grpo (and flow_grpo_fast), and prints the mean reward of the first and last 10 steps.
A benchmark, not a test: it asserts nothing about speed and takes a few minutes on a CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainer.run import METRICS_FILE, run  # noqa: E402

ALGORITHM_FIELDS = {
    "flow_grpo": {"noise_level": 0.7, "clip_range": 1e-4},
    "flow_grpo_fast": {"noise_level": 0.7, "clip_range": 1e-5, "window_size": 2},
    "dance_grpo": {"noise_level": 0.3, "clip_range": 1e-4, "train_timesteps": 2},
    "flash_grpo": {"clip_range": 1e-3},
}


LEARN_PROMPTS = ["a red apple", "a blue car", "a green ball", "a yellow flower"]


def learning_spec(algorithm: str, steps: int, seed: int, prompt_file: Path) -> dict:
    """Four colours only: with all 80 built-in prompts, which colours a step happens to draw
    moves the step's mean reward more than a few dozen updates do."""
    return {
        "name": f"learn-{algorithm}",
        "model": {"family": "sd3", "path": "builtin:tiny", "finetune": "full"},
        "algorithm": {
            "name": algorithm,
            "sampling_steps": 4,
            "group_size": 8,
            "prompts_per_step": 4,
            "total_steps": steps,
            "learning_rate": 1e-2,
            **ALGORITHM_FIELDS[algorithm],
        },
        "reward": [{"name": "prompt_color_match"}],
        "prompts": {"source": str(prompt_file), "eval": LEARN_PROMPTS[:2]},
        "samples": {"count": 0},
        "seed": seed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algorithms", nargs="+", default=["flow_grpo", "dance_grpo", "flash_grpo", "flow_grpo_fast"])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for algorithm in args.algorithms:
            folder = Path(scratch) / algorithm
            folder.mkdir()
            spec_path = folder / "spec.json"
            prompt_file = folder / "prompts.txt"
            prompt_file.write_text("\n".join(LEARN_PROMPTS) + "\n")
            spec_path.write_text(json.dumps(learning_spec(algorithm, args.steps, args.seed, prompt_file)))
            started = time.perf_counter()
            run(spec_path, folder / "out", resume=False)
            seconds = time.perf_counter() - started
            lines = (folder / "out" / METRICS_FILE).read_text().splitlines()
            rewards = [json.loads(line)["reward/mean"] for line in lines]
            rows.append((algorithm, statistics.mean(rewards[:10]), statistics.mean(rewards[-10:]), seconds))
    print(f"\n{'algorithm':<16}{'first 10':>10}{'last 10':>10}{'gain':>9}{'seconds':>9}")
    for algorithm, first, last, seconds in rows:
        print(f"{algorithm:<16}{first:>10.4f}{last:>10.4f}{last - first:>+9.4f}{seconds:>9.1f}")


if __name__ == "__main__":
    main()
