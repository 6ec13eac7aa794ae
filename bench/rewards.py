"""``make bench-rewards``: what scoring on a shared reward server costs a job, and the server's images/s.

Each round starts trainer processes (``python -m trainer run``, the tiny model, ``rollout_chunks`` 2 so that
a chunk is scored while the next one samples) all at once: ``--trainers`` scoring ``brightness`` locally and
``--trainers`` scoring it through one ``sfumato reward-server --reward brightness`` they share (dynamic
batching on), so that the machine's other load falls on both kinds alike. The overhead is what the remote
reward adds to the training thread's wait for scores (``time/reward``), as a fraction of the local step time:
(remote wait - local wait) / local step, medians over the steps after the warm-up; the target is at most 10 %.
The step times are shown beside it.

Then the server alone: ``--callers`` threads, each a remote reward sending ``--batch`` images at a time, for
``--seconds``; images/s is the growth of ``sfumato_reward_images_total`` over the wall time.

Writes bench/results/rewards.md. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per process: the CPU is shared

import torch  # noqa: E402

from sfumato.cli.reward_server_process import RewardServer, start_reward_server  # noqa: E402
from trainer.rewards.remote import RemoteReward  # noqa: E402
from trainer.spec import RewardSpec  # noqa: E402

RESULTS = REPO / "bench" / "results" / "rewards.md"
TARGET = 0.10


@dataclass
class Row:
    NUMBERS = ("local_step", "remote_step", "local_wait", "remote_wait")

    label: object
    local_step: float
    remote_step: float
    local_wait: float
    remote_wait: float

    @property
    def overhead(self) -> float:
        return (self.remote_wait - self.local_wait) / self.local_step

    def line(self) -> str:
        return (
            f"round {self.label}: step local {self.local_step:.3f} s, remote {self.remote_step:.3f} s; reward wait "
            f"local {self.local_wait:.4f} s, remote {self.remote_wait:.4f} s; overhead {self.overhead:+.1%}"
        )

    def markdown(self) -> str:
        return (
            f"| {self.label} | {self.local_step:.3f} | {self.remote_step:.3f} | "
            f"{self.remote_step / self.local_step:.3f} | {self.local_wait:.4f} | {self.remote_wait:.4f} | "
            f"{self.overhead:+.1%} |"
        )


def trainer_spec(reward: dict, steps: int) -> dict:
    spec = json.loads((REPO / "examples" / "tiny-native.json").read_text())
    spec["algorithm"].update(total_steps=steps, rollout_chunks=2)
    spec.update(reward=[reward], samples={"every": steps, "count": 0}, checkpoint={"every": 0})
    return spec


def train_together(rewards: list[dict], steps: int, warmup: int, home: Path) -> list[list[dict]]:
    """One trainer per reward, all started at once; each trainer's step metrics after the warm-up."""
    with tempfile.TemporaryDirectory() as scratch:
        runs = []
        for index, reward in enumerate(rewards):
            folder = Path(scratch) / f"trainer-{index}"
            folder.mkdir()
            (folder / "spec.json").write_text(json.dumps(trainer_spec(reward, steps)))
            argv = [sys.executable, "-m", "trainer", "run", "--spec", str(folder / "spec.json"), "--output-dir",
                    str(folder / "out")]  # fmt: skip
            env = {**os.environ, "SFUMATO_HOME": str(home), "PYTHONPATH": str(REPO)}
            env.pop("SFUMATO_API_URL", None)
            runs.append((folder, subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.PIPE, text=True)))  # fmt: skip
        metrics = []
        for folder, proc in runs:
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"a trainer failed:\n{stderr[-3000:]}")
            lines = (folder / "out" / "metrics.jsonl").read_text().splitlines()
            metrics.append([json.loads(line) for line in lines][warmup:])
        return metrics


def median_of(runs: list[list[dict]], key: str) -> float:
    return statistics.median(step[key] for run in runs for step in run)


def server_throughput(server: RewardServer, callers: int, batch: int, seconds: float, size: int) -> float:
    images = torch.rand(batch, 3, size, size)
    prompts = ["a red apple"] * batch
    stop = time.monotonic() + seconds

    def call() -> None:
        reward = RemoteReward(RewardSpec(name="remote", url=server.url, batch_size=batch))
        while time.monotonic() < stop:
            reward(images, prompts)

    before = server.metrics()["sfumato_reward_images_total"]
    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (server.metrics()["sfumato_reward_images_total"] - before) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of local and remote trainers side by side")
    parser.add_argument("--steps", type=int, default=12, help="steps per trainer run")
    parser.add_argument("--warmup", type=int, default=2, help="first steps of each run left out")
    parser.add_argument("--trainers", type=int, default=2, help="trainer processes sharing the server")
    parser.add_argument("--max-wait-ms", default="10")
    parser.add_argument("--callers", type=int, default=4, help="throughput: concurrent callers")
    parser.add_argument("--batch", type=int, default=16, help="throughput: images per request")
    parser.add_argument("--size", type=int, default=64, help="throughput: image side in pixels")
    parser.add_argument("--seconds", type=float, default=10.0, help="throughput: how long the callers send")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-rewards-home-"))
    server = start_reward_server("--reward", "brightness", "--max-wait-ms", args.max_wait_ms)
    rows = []
    try:
        local, remote = {"name": "brightness"}, {"name": "remote", "url": server.url}
        train_together([local], 2, 0, home)  # builds the tiny model once, outside the rounds
        for round_index in range(1, args.rounds + 1):
            # Local and remote trainers side by side: the machine's other load falls on both alike.
            runs = train_together([local] * args.trainers + [remote] * args.trainers, args.steps, args.warmup, home)
            local_runs, remote_runs = runs[: args.trainers], runs[args.trainers :]
            row = Row(
                round_index,
                median_of(local_runs, "time/step"),
                median_of(remote_runs, "time/step"),
                median_of(local_runs, "time/reward"),
                median_of(remote_runs, "time/reward"),
            )
            rows.append(row)
            print(row.line(), flush=True)
        metrics = server.metrics()
        throughput = server_throughput(server, args.callers, args.batch, args.seconds, args.size)
    finally:
        server.kill()

    total = Row(
        "**median**", *(statistics.median(getattr(row, field) for row in rows) for field in Row.NUMBERS)
    )  # fmt: skip
    overhead = total.overhead
    batches = metrics["sfumato_reward_batch_size_count"]
    mean_batch = metrics["sfumato_reward_batch_size_sum"] / batches if batches else 0.0
    lines = [
        "# Remote reward overhead and reward-server throughput (`make bench-rewards`)",
        "",
        f"Each round starts {args.trainers} trainers scoring `brightness` locally and {args.trainers} scoring it "
        f"through one `sfumato reward-server` they share (`--max-wait-ms {args.max_wait_ms}`), all at once, so "
        "that the machine's other load falls on both alike (tiny model, `rollout_chunks` 2: a chunk is scored "
        f"while the next samples; 8 images a step). Medians over steps {args.warmup + 1}..{args.steps} of each "
        f"kind's trainers. `time/reward` is what the training thread waits for the scores. The overhead is the "
        "remote reward's extra wait as a fraction of the local step: (remote wait - local wait) / local step; "
        "the step times themselves move with the machine's load far more than that. CPU only, "
        f"{os.cpu_count()} cores, shared with other work; measured {time.strftime('%Y-%m-%d')}.",
        "",
        "| round | local s/step | remote s/step | remote / local step | local wait s | remote wait s | overhead |",
        "|---|---|---|---|---|---|---|",
        *[row.markdown() for row in rows],
        total.markdown(),
        "",
        f"Overhead {overhead:+.1%} of the local step (target at most {TARGET:.0%}: "
        f"{'met' if overhead <= TARGET else 'missed'}). The remote trainers' steps took "
        f"{total.remote_step / total.local_step:.2f}x the local ones: on this machine the reward server and the PNG "
        "encoding take CPU from the same cores the trainers sample on, which a reward server on other machines "
        "does not.",
        "",
        f"Batches the server ran during the trainer rounds: {batches:.0f}, {mean_batch:.1f} images on average "
        "(the trainers' requests hold 4 images: a larger mean is callers merged).",
        "",
        f"Server throughput: **{throughput:.0f} images/s** ({args.callers} callers, {args.batch} images of "
        f"{args.size}x{args.size} per request, {args.seconds:g} s; `brightness` costs next to nothing, so this "
        "is the protocol's own cost: PNG, base64, JSON, HTTP).",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
