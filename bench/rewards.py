"""``make bench-rewards``: what scoring on a shared reward server costs a job, and the server's images/s.

Two trainer processes (``python -m trainer run``, the tiny model, ``rollout_chunks`` 2 so that a chunk is
scored while the next one samples) run side by side, first scoring ``brightness`` locally, then through one
``sfumato reward-server --reward brightness`` they share (dynamic batching on). The rounds alternate local and
remote so that both see the same machine load; a round's step time is the median over both trainers' steps
after the warm-up ones. The overhead is (remote - local) / local; the target is at most 10 %.

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


def trainer_spec(reward: dict, steps: int) -> dict:
    spec = json.loads((REPO / "examples" / "tiny-native.json").read_text())
    spec["algorithm"].update(total_steps=steps, rollout_chunks=2)
    spec.update(reward=[reward], samples={"every": steps, "count": 0}, checkpoint={"every": 0})
    return spec


def step_times(reward: dict, steps: int, warmup: int, trainers: int, home: Path) -> list[float]:
    """``trainers`` runs of the same spec started together; every step's time after the warm-up."""
    with tempfile.TemporaryDirectory() as scratch:
        runs = []
        for index in range(trainers):
            folder = Path(scratch) / f"trainer-{index}"
            folder.mkdir()
            (folder / "spec.json").write_text(json.dumps(trainer_spec(reward, steps)))
            argv = [sys.executable, "-m", "trainer", "run", "--spec", str(folder / "spec.json"), "--output-dir",
                    str(folder / "out")]  # fmt: skip
            env = {**os.environ, "SFUMATO_HOME": str(home), "PYTHONPATH": str(REPO)}
            env.pop("SFUMATO_API_URL", None)
            runs.append((folder, subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.PIPE, text=True)))  # fmt: skip
        times = []
        for folder, proc in runs:
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"a trainer failed:\n{stderr[-3000:]}")
            lines = (folder / "out" / "metrics.jsonl").read_text().splitlines()
            times += [json.loads(line)["time/step"] for line in lines][warmup:]
        return times


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
    parser.add_argument("--rounds", type=int, default=3, help="local/remote pairs, alternated")
    parser.add_argument("--steps", type=int, default=8, help="steps per trainer run")
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
        remote = {"name": "remote", "url": server.url}
        step_times({"name": "brightness"}, 2, 0, 1, home)  # builds the tiny model once, outside the rounds
        for round_index in range(1, args.rounds + 1):
            local = statistics.median(step_times({"name": "brightness"}, args.steps, args.warmup, args.trainers, home))
            shared = statistics.median(step_times(remote, args.steps, args.warmup, args.trainers, home))
            rows.append((round_index, local, shared))
            print(f"round {round_index}: local {local:.3f} s/step, remote {shared:.3f} s/step, "
                  f"overhead {(shared - local) / local:+.1%}", flush=True)  # fmt: skip
        metrics = server.metrics()
        throughput = server_throughput(server, args.callers, args.batch, args.seconds, args.size)
    finally:
        server.kill()

    local_all = statistics.median(row[1] for row in rows)
    remote_all = statistics.median(row[2] for row in rows)
    overhead = (remote_all - local_all) / local_all
    batches = metrics["sfumato_reward_batch_size_count"]
    mean_batch = metrics["sfumato_reward_batch_size_sum"] / batches if batches else 0.0
    lines = [
        "# Remote reward overhead and reward-server throughput (`make bench-rewards`)",
        "",
        f"{args.trainers} trainer processes at once (tiny model, `rollout_chunks` 2, 8 images a step), scoring "
        f"`brightness` locally or through one shared `sfumato reward-server` (`--max-wait-ms {args.max_wait_ms}`). "
        f"Median step time over steps {args.warmup + 1}..{args.steps} of both trainers; rounds alternate. "
        f"CPU only, {os.cpu_count()} cores, shared with other work; measured "
        f"{time.strftime('%Y-%m-%d')}.",
        "",
        "| round | local s/step | remote s/step | remote / local | overhead |",
        "|---|---|---|---|---|",
        *[f"| {r} | {lo:.3f} | {re:.3f} | {re / lo:.3f} | {(re - lo) / lo:+.1%} |" for r, lo, re in rows],
        f"| **median** | **{local_all:.3f}** | **{remote_all:.3f}** | **{remote_all / local_all:.3f}** | "
        f"**{overhead:+.1%}** (target ≤ +{TARGET:.0%}: {'met' if overhead <= TARGET else 'missed'}) |",
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
