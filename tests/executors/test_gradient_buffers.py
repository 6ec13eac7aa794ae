"""lean_reweight's provisional-gradient buffers on plain tensors: each regime leaves H = Σ_q f_q P_q in ``.grad``
at ``close`` (per_rank scales the one sample's P in place, per_sample sums its buffers, affine forms
scale · Σ_q w_q (r_q - r̄) P_q from two running sums), and the KL buffer keeps the β·KL gradient out of
``.grad`` until it is added unscaled."""

from __future__ import annotations

import pytest
import torch

from trainer.executors.gradient_buffers import (
    AffineBuffers,
    KlBuffer,
    PerRankBuffer,
    PerSampleBuffers,
    take_grads,
    tensor_bytes,
)

P = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([-2.0, 0.5, 4.0]), torch.tensor([0.25, -1.0, 2.0])]
Q = [torch.tensor([[1.0, -1.0]]), torch.tensor([[3.0, 2.0]]), torch.tensor([[-1.0, 0.5]])]


def params() -> list[torch.Tensor]:
    return [torch.zeros(3, requires_grad=True), torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)]


def provisional(tensors: list[torch.Tensor], q: int) -> None:
    """Sample q's provisional gradient lands in .grad, as its backward would leave it."""
    tensors[0].grad = P[q].clone()
    tensors[1].grad = Q[q].clone().double()


def test_take_grads_moves_each_grad_out_without_a_copy_and_zeros_a_missing_one() -> None:
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(1, 3, requires_grad=True)
    a.grad = torch.tensor([1.0, 2.0])
    held = a.grad
    taken = take_grads([a, b])
    assert taken[0] is held and a.grad is None and b.grad is None
    assert torch.equal(taken[1], torch.zeros(1, 3))


def test_tensor_bytes_counts_every_element_at_its_own_width() -> None:
    assert tensor_bytes([torch.zeros(3), torch.zeros(2, 5, dtype=torch.float64)]) == 3 * 4 + 10 * 8


def test_per_rank_scales_its_one_sample_s_gradient_in_place() -> None:
    tensors = params()
    buffer = PerRankBuffer(tensors)
    provisional(tensors, 0)
    tensors[1].grad = None  # a tensor the sample's backward did not reach
    buffer.sample_done(1.0, 0.3)
    buffer.close([-0.5])
    assert torch.equal(tensors[0].grad, -0.5 * P[0])
    assert torch.equal(tensors[1].grad, torch.zeros(1, 2, dtype=torch.float64))
    assert buffer.regime == 1 and buffer.samples == 0


def test_per_rank_refuses_a_second_sample_in_one_group() -> None:
    buffer = PerRankBuffer(params())
    buffer.sample_done(1.0, 0.0)
    refusal = r"^per_rank buffers hold one sample per group; a second would mix into \.grad$"
    with pytest.raises(RuntimeError, match=refusal):
        buffer.sample_done(1.0, 0.0)


def test_per_sample_sums_each_sample_s_gradient_times_its_factor() -> None:
    tensors = params()
    buffer = PerSampleBuffers(tensors)
    for q in range(3):
        provisional(tensors, q)
        buffer.sample_done(1.0, 0.0)
        assert tensors[0].grad is None  # moved out, so the next backward starts from nothing
    factors = [0.5, -2.0, 3.0]
    buffer.close(factors)
    assert torch.allclose(tensors[0].grad, sum(f * p for f, p in zip(factors, P, strict=True)))
    assert torch.allclose(tensors[1].grad, sum(f * q.double() for f, q in zip(factors, Q, strict=True)))
    assert buffer.peak_bytes == 3 * (3 * 4 + 2 * 8) and buffer.buffers == [] and buffer.regime == 2


def test_per_sample_refuses_factors_that_do_not_match_its_samples() -> None:
    """A factor more or fewer would drop a sample's gradient, or a correction, without a word."""
    tensors = params()
    buffer = PerSampleBuffers(tensors)
    for q in range(2):
        provisional(tensors, q)
        buffer.sample_done(1.0, 0.0)
    with pytest.raises(ValueError, match="zip"):
        buffer.close([1.0, 2.0, 3.0])


@pytest.mark.parametrize("offset", [None, 0.7], ids=["first-reward-offset", "given-offset"])
def test_affine_gives_scale_times_the_weighted_centred_sum_of_gradients(offset: float | None) -> None:
    tensors = params()
    buffer = AffineBuffers(tensors, offset)
    weights, rewards = [1.0, 0.5, 2.0], [0.9, 0.2, 0.4]
    for q in range(3):
        provisional(tensors, q)
        buffer.sample_done(weights[q], rewards[q])
        assert tensors[0].grad is None
    mean, scale = sum(rewards) / 3, 0.25
    buffer.close(mean, scale)
    want = [scale * w * (r - mean) for w, r in zip(weights, rewards, strict=True)]
    assert torch.allclose(tensors[0].grad, sum(f * p for f, p in zip(want, P, strict=True)), atol=1e-6)
    assert torch.allclose(tensors[1].grad, sum(f * q.double() for f, q in zip(want, Q, strict=True)), atol=1e-6)
    assert tensors[1].grad.dtype == torch.float64  # the parameter's own dtype
    assert buffer.peak_bytes == 2 * (3 + 2) * 4 and buffer.regime == 4


def test_affine_starts_each_group_from_empty_sums_and_its_own_first_reward() -> None:
    tensors = params()
    buffer = AffineBuffers(tensors)
    provisional(tensors, 0)
    buffer.sample_done(1.0, 5.0)
    buffer.close(4.0, 1.0)
    assert buffer.offset is None and all(float(s.abs().sum()) == 0.0 for s in buffer.s0 + buffer.s1)
    for q, reward in ((1, 0.2), (2, 0.6)):
        provisional(tensors, q)
        buffer.sample_done(1.0, reward)
    buffer.close(0.4, 2.0)
    assert torch.allclose(tensors[0].grad, 2.0 * (-0.2 * P[1] + 0.2 * P[2]), atol=1e-6)


def test_affine_skips_a_tensor_the_sample_s_backward_did_not_reach() -> None:
    tensors = params()
    buffer = AffineBuffers(tensors)
    provisional(tensors, 0)
    tensors[1].grad = None
    buffer.sample_done(1.0, 1.0)
    provisional(tensors, 1)
    buffer.sample_done(1.0, 3.0)
    buffer.close(2.0, 1.0)
    assert torch.allclose(tensors[1].grad, Q[1].double())  # (3 - 2)·Q1, sample 0 adding nothing


def test_the_kl_buffer_backwards_beside_grad_keeps_the_graph_and_adds_unscaled() -> None:
    weight = torch.tensor([1.0, 2.0], requires_grad=True)
    weight.grad = torch.tensor([10.0, 10.0])  # a provisional gradient already there
    buffer = KlBuffer([weight])
    loss = (weight**2).sum()
    buffer.backward(3 * loss)
    assert torch.equal(weight.grad, torch.tensor([10.0, 10.0]))  # untouched
    assert buffer.bytes == 2 * 4
    loss.backward()  # the graph is still there for the provisional backward
    assert torch.equal(weight.grad, torch.tensor([12.0, 14.0]))
    buffer.backward((weight**2).sum())  # accumulates in the buffer, not in .grad
    buffer.add_to_grads()
    assert torch.equal(weight.grad, torch.tensor([12.0, 14.0]) + 4 * torch.tensor([2.0, 4.0]))
    assert buffer.grads == [None] and buffer.bytes == 0


def test_the_kl_buffer_sets_a_grad_that_was_none_and_leaves_an_unreached_tensor_alone() -> None:
    reached, unreached = torch.tensor([1.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)
    buffer = KlBuffer([reached, unreached])
    buffer.backward((reached * 2).sum())
    buffer.add_to_grads()
    assert torch.equal(reached.grad, torch.tensor([2.0])) and unreached.grad is None
