"""``make bench-learn``: does each algorithm actually learn on the tiny model?

Trains the built-in tiny model on ``prompt_color_match`` with flow_grpo, dance_grpo, flash_grpo
and flow_grpo_fast, and prints the mean training reward of the first and last 10 steps, with
the gain in units of its standard error (from the step-to-step spread of each half). A
benchmark, not a test: it asserts nothing and takes a few minutes on a CPU.

The spec is chosen for a 77k-parameter model with D = 4 x 8 x 8 = 256 latent elements:

- four colour prompts, all drawn every step (prompts are drawn without replacement), so a
  step's mean reward does not move with which colours it happened to draw;
- full fine-tuning at lr 1e-2: the random tiny transformer has to learn the colour mapping
  from scratch, which a rank-4 adapter at the papers' 3e-4 does not do in 40 steps;
- 4 sampling steps and 8 samples per prompt: enough within-group spread for the advantage;
- the papers' clip ranges are kept. They do not bind here: the native executor takes one
  optimizer step per rollout, so every ratio is exactly 1 (``clip_frac`` stays 0).

Before the tiny VAE was shaped to carry colour in its latents (``trainer/models/tiny_vae.py``),
this benchmark showed no learning: a random decoder maps every latent to near-grey, and the
policy gradient of this reward was uncorrelated with the true gradient.
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

from trainer.run import METRICS_FILE, run  # noqa: E402

ALGORITHM_FIELDS = {
    "flow_grpo": {"noise_level": 0.7, "clip_range": 1e-4},
    "dance_grpo": {"noise_level": 0.3, "clip_range": 1e-4, "train_timesteps": 2},
    "flash_grpo": {"clip_range": 1e-3},
    "flow_grpo_fast": {"noise_level": 0.7, "clip_range": 1e-5, "window_size": 2},
}
LEARN_PROMPTS = ["a red apple", "a blue car", "a green ball", "a yellow flower"]
WINDOW = 10


def learning_spec(algorithm: str, steps: int, seed: int, prompt_file: Path) -> dict:
    return {
        "name": f"learn-{algorithm}",
        "model": {"family": "sd3", "path": "builtin:tiny", "finetune": "full"},
        "algorithm": {
            "name": algorithm,
            "sampling_steps": 4,
            "group_size": 8,
            "prompts_per_step": len(LEARN_PROMPTS),
            "total_steps": steps,
            "learning_rate": 1e-2,
            **ALGORITHM_FIELDS[algorithm],
        },
        "reward": [{"name": "prompt_color_match"}],
        "prompts": {"source": str(prompt_file), "eval": LEARN_PROMPTS[:2]},
        "samples": {"count": 0},
        "seed": seed,
    }


def gain_in_standard_errors(first: list[float], last: list[float]) -> float:
    error = (statistics.variance(first) / len(first) + statistics.variance(last) / len(last)) ** 0.5
    return (statistics.mean(last) - statistics.mean(first)) / error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHM_FIELDS))
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
            first, last = rewards[:WINDOW], rewards[-WINDOW:]
            rows.append((algorithm, first, last, seconds))
    print(f"\n{'algorithm':<16}{'first 10':>10}{'last 10':>10}{'gain':>9}{'gain/se':>9}{'seconds':>9}")
    for algorithm, first, last, seconds in rows:
        before, after = statistics.mean(first), statistics.mean(last)
        ratio = gain_in_standard_errors(first, last)
        print(f"{algorithm:<16}{before:>10.4f}{after:>10.4f}{after - before:>+9.4f}{ratio:>9.1f}{seconds:>9.1f}")


if __name__ == "__main__":
    main()
