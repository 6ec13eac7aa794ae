"""The unit digenrl streams from a generator to a trainer (trainer/executors/units.py) travels as one float64 tensor of
the size both sides compute from the spec, and comes back field for field."""

from __future__ import annotations

import torch

from trainer.executors.units import Unit, unit_size, unpack

STEPS, SHAPE, PARTS = 3, (2, 4, 4), 2


def a_unit() -> Unit:
    generator = torch.Generator().manual_seed(0)
    log_probs = torch.randn(STEPS, generator=generator)
    latents = torch.randn(STEPS + 1, *SHAPE, generator=generator)
    return Unit(5, 2, 7, reward=0.375, parts=[0.25, -1.5], log_probs=log_probs, latents=latents)


def test_a_packed_unit_has_the_size_the_receiver_allocates() -> None:
    packed = a_unit().pack()
    assert packed.dtype == torch.float64
    assert packed.shape == (unit_size(STEPS, SHAPE, PARTS),)


def test_an_unpacked_unit_is_the_sent_one_field_for_field() -> None:
    sent = a_unit()
    received = unpack(sent.pack(), STEPS, SHAPE, PARTS)
    assert (received.sample_id, received.group_id, received.version) == (5, 2, 7)
    assert received.reward == 0.375 and received.parts == [0.25, -1.5]
    assert received.log_probs.dtype == torch.float32 and torch.equal(received.log_probs, sent.log_probs)
    assert received.latents.dtype == torch.float32 and torch.equal(received.latents, sent.latents)
