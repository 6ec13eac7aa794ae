"""Dynamic batching: images of concurrent requests scored together, up to ``max_batch``, waiting ``max_wait_s``.

Several trainers share one reward server; each sends a few images at a time. The reward model runs far
better on one batch of their images than on each request alone, so the first image waiting opens a window of
``max_wait_s``: every image that arrives meanwhile (of the same size: a batch is one tensor) joins its batch,
which closes early once it is full. A request larger than ``max_batch`` is cut into pieces. Batches run one
at a time on one thread, so the reward model is never entered twice; requests queue while one runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainer.reward_server.batch_scorer import BatchScores


@dataclass
class Piece:
    """Consecutive images of one request, all of one size, that go into one batch."""

    pixels: np.ndarray  # [n, H, W, 3] uint8
    prompts: list[str]
    metadata: list[dict[str, Any]]
    arrived: float
    done: asyncio.Future[BatchScores] = field(repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.pixels.shape[1:])


def cut(images: list[np.ndarray], max_batch: int) -> list[slice]:
    """Runs of same-size images, each at most ``max_batch`` long."""
    pieces: list[slice] = []
    start = 0
    for end in range(1, len(images) + 1):
        if end == len(images) or end - start == max_batch or images[end].shape != images[start].shape:
            pieces.append(slice(start, end))
            start = end
    return pieces


class DynamicBatcher:
    def __init__(
        self,
        score: Callable[[np.ndarray, list[str], list[dict[str, Any]]], BatchScores],
        max_batch: int,
        max_wait_s: float,
        on_batch: Callable[[int], None] = lambda size: None,
    ) -> None:
        self.score = score
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.on_batch = on_batch
        self.waiting: list[Piece] = []
        self.arrival = asyncio.Event()
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward-batch")

    async def submit(self, images: list[np.ndarray], prompts: list[str], metadata: list[dict[str, Any]]) -> BatchScores:
        """The scores of one request's images, in order, once every batch holding some of them has run."""
        loop = asyncio.get_running_loop()
        pieces = [
            Piece(np.stack(images[rows]), prompts[rows], metadata[rows], loop.time(), loop.create_future())
            for rows in cut(images, self.max_batch)
        ]
        self.waiting.extend(pieces)
        self.arrival.set()
        results = await asyncio.gather(*(piece.done for piece in pieces))
        names = results[0].sub_scores.keys()
        return BatchScores(
            scores=[s for result in results for s in result.scores],
            sub_scores={name: [s for result in results for s in result.sub_scores[name]] for name in names},
        )

    async def run(self) -> None:
        """Form and score batches for as long as the server runs."""
        loop = asyncio.get_running_loop()
        while True:
            self.waiting = [piece for piece in self.waiting if not piece.done.done()]  # callers gone meanwhile
            if not self.waiting:
                self.arrival.clear()
                await self.arrival.wait()
                continue
            batch = await self.next_batch(loop)
            size = sum(len(piece.prompts) for piece in batch)
            self.on_batch(size)
            try:
                scores = await loop.run_in_executor(self.thread, self.score_batch, batch)
            except Exception as exc:  # the reward failed: every request in the batch gets the error
                for piece in batch:
                    if not piece.done.done():
                        piece.done.set_exception(exc)
                continue
            self.deliver(batch, scores)

    def score_batch(self, batch: list[Piece]) -> BatchScores:
        pixels = np.concatenate([piece.pixels for piece in batch])
        prompts = [prompt for piece in batch for prompt in piece.prompts]
        return self.score(pixels, prompts, [item for piece in batch for item in piece.metadata])

    async def next_batch(self, loop: asyncio.AbstractEventLoop) -> list[Piece]:
        """The oldest piece and the others of its size that fit, once the batch is full or its window closed."""
        first = self.waiting[0]
        deadline = first.arrived + self.max_wait_s
        while self.fitting(first) < self.max_batch and (left := deadline - loop.time()) > 0:
            self.arrival.clear()
            try:
                await asyncio.wait_for(self.arrival.wait(), left)
            except TimeoutError:
                break
        batch, size = [], 0
        for piece in list(self.waiting):
            if piece.shape == first.shape and size + len(piece.prompts) <= self.max_batch:
                batch.append(piece)
                size += len(piece.prompts)
                self.waiting.remove(piece)
        return batch

    def fitting(self, first: Piece) -> int:
        return sum(len(piece.prompts) for piece in self.waiting if piece.shape == first.shape)

    @staticmethod
    def deliver(batch: list[Piece], scores: BatchScores) -> None:
        start = 0
        for piece in batch:
            rows = slice(start, start + len(piece.prompts))
            start = rows.stop
            if not piece.done.done():  # a caller that went away (timeout) cancelled its future
                piece.done.set_result(
                    BatchScores(scores.scores[rows], {name: values[rows] for name, values in scores.sub_scores.items()})
                )

    def close(self) -> None:
        self.thread.shutdown(wait=False, cancel_futures=True)
