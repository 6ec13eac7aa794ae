"""Rewards of rollout chunks scored on one background thread while the next chunk samples.

The rollout hands each chunk's images over as soon as they are decoded; the worker scores the
chunks one after another, in the order they came, and the trainer joins them all before it forms
advantages. Each chunk is scored as one batch either way, so the rewards are those of scoring the
same chunks inline. On CUDA the worker runs on a stream of its own, after the images are ready, and its scores
stay on the device.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

import torch

from trainer.rewards.registry import WeightedReward

Scored = tuple[torch.Tensor, dict[str, torch.Tensor]]


class BackgroundScorer:
    def __init__(self, reward: WeightedReward, background: bool = True) -> None:
        self.reward = reward
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward") if background else None
        self.pending: list[Future[tuple[Scored, float]]] = []
        self.busy_seconds = 0.0  # scoring time of the last collected rollout, wherever it ran

    def submit(self, images: torch.Tensor, prompts: list[str]) -> None:
        ready = None
        if images.is_cuda:
            ready = torch.cuda.Event()
            ready.record()
        if self.pool is None:
            done: Future[tuple[Scored, float]] = Future()
            done.set_result(self.timed(ready, images, prompts))
            self.pending.append(done)
        else:
            self.pending.append(self.pool.submit(self.timed, ready, images, prompts))

    def collect(self) -> Scored:
        """Wait for every submitted chunk; their totals and parts concatenated in submission order."""
        results = [future.result() for future in self.pending]
        self.pending = []
        self.busy_seconds = sum(seconds for _, seconds in results)
        totals = torch.cat([total for (total, _), _ in results])
        names = results[0][0][1].keys()
        parts = {name: torch.cat([scored[1][name] for scored, _ in results]) for name in names}
        return totals, parts

    def discard(self) -> None:
        """Drop chunks nobody collected (a rollout that was not scored)."""
        for future in self.pending:
            future.result()
        self.pending = []

    def timed(self, ready: torch.cuda.Event | None, images: torch.Tensor, prompts: list[str]) -> tuple[Scored, float]:
        started = time.perf_counter()
        if ready is None:
            scored = self.reward(images, prompts)
        else:
            stream = torch.cuda.Stream(device=images.device)
            with torch.cuda.stream(stream):
                stream.wait_event(ready)
                scored = self.reward(images, prompts)
            # The scores stay on the device: this thread waits for its own stream (so the time is the scoring's,
            # and the trainer's stream may read them), and the allocator is told that stream uses them.
            stream.synchronize()
            consumer = torch.cuda.default_stream(images.device)
            for tensor in [scored[0], *scored[1].values()]:
                tensor.record_stream(consumer)
        return scored, time.perf_counter() - started
