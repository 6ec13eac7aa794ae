"""The reward server's dynamic batcher: requests merged up to max_batch, same-size images only, each caller
given its own scores, and a failing reward failing the requests of its batch only."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from trainer.reward_server.batch_scorer import BatchScores
from trainer.reward_server.batcher import DynamicBatcher


def image(value: int, side: int = 4) -> np.ndarray:
    return np.full((side, side, 3), value, dtype=np.uint8)


class Recorder:
    """A reward that scores an image by its first pixel and records the batches it ran on."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail_on = fail_on

    def __call__(self, pixels: np.ndarray, prompts: list[str], metadata: list[dict[str, Any]]) -> BatchScores:
        values = [int(p[0, 0, 0]) for p in pixels]
        self.batches.append(values)
        if self.fail_on in values:
            raise RuntimeError("the reward model ran out of memory")
        return BatchScores([float(v) for v in values], {"double": [2.0 * v for v in values]})


async def score_together(batcher: DynamicBatcher, requests: list[list[np.ndarray]]) -> list[Any]:
    running = asyncio.create_task(batcher.run())
    try:
        calls = [batcher.submit(images, ["p"] * len(images), [{}] * len(images)) for images in requests]
        return await asyncio.gather(*calls, return_exceptions=True)
    finally:
        running.cancel()
        batcher.close()


def test_concurrent_requests_are_merged_up_to_max_batch_and_each_gets_its_own_scores() -> None:
    reward = Recorder()
    requests = [[image(1), image(2)], [image(3)], [image(4), image(5), image(6)]]
    answers = asyncio.run(score_together(DynamicBatcher(reward, max_batch=4, max_wait_s=0.2), requests))
    assert [a.scores for a in answers] == [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]
    assert answers[2].sub_scores == {"double": [8.0, 10.0, 12.0]}
    assert reward.batches == [[1, 2, 3], [4, 5, 6]]  # the third request does not fit beside the first two


def test_a_request_larger_than_max_batch_is_cut_and_images_of_another_size_wait_for_their_own_batch() -> None:
    reward = Recorder()
    requests = [[image(n) for n in range(1, 6)], [image(9, side=8)]]
    answers = asyncio.run(score_together(DynamicBatcher(reward, max_batch=2, max_wait_s=0.05), requests))
    assert answers[0].scores == [1.0, 2.0, 3.0, 4.0, 5.0] and answers[1].scores == [9.0]
    assert all(len(batch) <= 2 for batch in reward.batches) and [9] in reward.batches


def test_a_failing_reward_fails_only_the_requests_of_its_batch() -> None:
    reward = Recorder(fail_on=7)
    requests = [[image(7)], [image(8)], [image(1), image(2)]]
    answers = asyncio.run(score_together(DynamicBatcher(reward, max_batch=2, max_wait_s=0.2), requests))
    assert isinstance(answers[0], RuntimeError) and isinstance(answers[1], RuntimeError)
    assert answers[2].scores == [1.0, 2.0]


@pytest.mark.parametrize("max_wait_s", [0.0, 0.05])
def test_a_lone_request_is_scored_within_its_window(max_wait_s: float) -> None:
    (answer,) = asyncio.run(score_together(DynamicBatcher(Recorder(), 8, max_wait_s), [[image(5)]]))
    assert answer.scores == [5.0]
