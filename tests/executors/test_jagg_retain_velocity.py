"""jagg_retain reads each row's rollout velocity at the step it trains (trainer/executors/jagg_retain.py,
``rollout_velocity``): the forward's own tensors (and graph) when one forward holds every row in order, else each
row's slice of its own step's forward. Pure: hand-made forwards."""

from __future__ import annotations

import torch

from trainer.executors.graph_rollout import TrainedForward
from trainer.executors.jagg_retain import rollout_velocity
from trainer.sampling.sde_step import StepOutput


def forward(step: int, rows: list[int], velocity: torch.Tensor, reference: torch.Tensor | None) -> TrainedForward:
    ones = torch.ones(len(rows))
    out = StepOutput(velocity, torch.zeros(len(rows)), velocity, ones, ones, velocity)
    return TrainedForward(step, rows, out, reference, velocity)


def test_one_forward_holding_every_row_in_order_gives_its_own_velocity_and_reference() -> None:
    velocity, reference = torch.randn(2, 3), torch.randn(2, 3)
    got, got_reference = rollout_velocity({1: [forward(1, [0, 1], velocity, reference)]}, [1, 1])
    assert got is velocity and got_reference is reference


def test_a_rank_of_one_row_takes_that_row_s_forward() -> None:
    velocity = torch.randn(1, 3)
    got, got_reference = rollout_velocity({2: [forward(2, [0], velocity, None)]}, [2])
    assert got is velocity and got_reference is None


def test_rows_trained_at_different_steps_are_stacked_from_their_own_forwards() -> None:
    velocities, references = torch.randn(2, 3), torch.randn(2, 3)
    forwards = {
        1: [forward(1, [0], velocities[:1], references[:1])],
        3: [forward(3, [1], velocities[1:], references[1:])],
    }
    got, got_reference = rollout_velocity(forwards, [1, 3])
    assert torch.equal(got, velocities) and torch.equal(got_reference, references)  # type: ignore[arg-type]
