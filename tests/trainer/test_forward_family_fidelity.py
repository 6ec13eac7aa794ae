"""Each forward-family loss against an fp64 re-implementation of its released code on random tensors
(≤ 1e-6 relative): DiffusionNFT's loss block of NVlabs/DiffusionNFT scripts/train_nft_sd3.py, AWM's
``compute_weighted_log_prob`` and clipped loss of Flow-Factory trainers/awm.py, DGPO's ``_maybe_clip_dsm`` and
``_compute_group_dgpo_loss`` of Flow-Factory trainers/dgpo.py. The references are written as those lines are."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms.awm import awm_loss, weighted_log_prob
from trainer.algorithms.dgpo import clipped_denoising_loss, denoising_loss, group_preference_loss, preference_terms
from trainer.algorithms.diffusion_nft import nft_loss

TOLERANCE = 1e-6


def relative(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours.double() - reference).abs().max() / reference.abs().max().clamp(min=1e-30))


def tensors(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shape = (6, 4, 8, 8)
    return {
        "velocity": torch.randn(shape, generator=g, dtype=torch.float64),
        "old": torch.randn(shape, generator=g, dtype=torch.float64),
        "reference": torch.randn(shape, generator=g, dtype=torch.float64),
        "clean": torch.randn(shape, generator=g, dtype=torch.float64),
        "noise": torch.randn(shape, generator=g, dtype=torch.float64),
        "sigma": torch.rand(shape[0], generator=g, dtype=torch.float64) * 0.9 + 0.05,
        "advantages": torch.randn(shape[0], generator=g, dtype=torch.float64) * 3,
    }


def nvlabs_nft(t: dict[str, torch.Tensor], beta: float, adv_clip_max: float) -> torch.Tensor:
    x0, t_expanded = t["clean"], t["sigma"].view(-1, 1, 1, 1)
    xt = (1 - t_expanded) * x0 + t_expanded * t["noise"]
    forward_prediction, old_prediction = t["velocity"], t["old"]
    advantages_clip = torch.clamp(t["advantages"], -adv_clip_max, adv_clip_max)
    normalized_advantages_clip = (advantages_clip / adv_clip_max) / 2.0 + 0.5
    r = torch.clamp(normalized_advantages_clip, 0, 1)
    positive_prediction = beta * forward_prediction + (1 - beta) * old_prediction
    implicit_negative_prediction = (1.0 + beta) * old_prediction - beta * forward_prediction
    x0_prediction = xt - t_expanded * positive_prediction
    weight_factor = torch.abs(x0_prediction - x0).mean(dim=tuple(range(1, x0.ndim)), keepdim=True).clip(min=0.00001)
    positive_loss = ((x0_prediction - x0) ** 2 / weight_factor).mean(dim=tuple(range(1, x0.ndim)))
    negative_x0_prediction = xt - t_expanded * implicit_negative_prediction
    negative_weight_factor = (
        torch.abs(negative_x0_prediction - x0).mean(dim=tuple(range(1, x0.ndim)), keepdim=True).clip(min=0.00001)
    )
    negative_loss = ((negative_x0_prediction - x0) ** 2 / negative_weight_factor).mean(dim=tuple(range(1, x0.ndim)))
    ori_policy_loss = r * positive_loss / beta + (1.0 - r) * negative_loss / beta
    return (ori_policy_loss * adv_clip_max).mean()


def flow_factory_awm(t: dict[str, torch.Tensor], weighting: str, clip: float, adv_clip: float) -> torch.Tensor:
    target = t["noise"] - t["clean"]

    def log_prob_of(model_output: torch.Tensor) -> torch.Tensor:
        log_prob = (-((model_output - target) ** 2)).mean(dim=tuple(range(1, model_output.ndim)))
        sigma = t["sigma"]
        if weighting == "t":
            log_prob = log_prob * sigma
        elif weighting == "t2":
            log_prob = log_prob * sigma**2
        elif weighting == "huber":
            log_prob = -(torch.sqrt(-log_prob + 1e-10) - 1e-5) * sigma
        elif weighting == "ghuber":
            eps = torch.tensor(1e-10, dtype=torch.float64)
            log_prob = -(torch.pow(-log_prob + eps, 0.25) - torch.pow(eps, 0.25)) * sigma / 0.25
        return log_prob

    adv = torch.clamp(t["advantages"], -adv_clip, adv_clip)
    ratio = torch.exp(log_prob_of(t["velocity"]) - log_prob_of(t["old"]))
    unclipped_loss = -adv * ratio
    clipped_loss = -adv * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    return torch.mean(torch.maximum(unclipped_loss, clipped_loss))


def flow_factory_dgpo(
    t: dict[str, torch.Tensor], groups: torch.Tensor, dpo_beta: float, group_size: int, clip: float, adv_clip: float
) -> torch.Tensor:
    b = t["velocity"].shape[0]
    target_v = t["noise"] - t["clean"]
    adv = torch.clamp(t["advantages"], -adv_clip, adv_clip)
    dsm_loss = (target_v - t["velocity"]).square().reshape(b, -1).mean(dim=1)
    old_dsm = (target_v - t["old"]).square().reshape(b, -1).mean(dim=1)
    ratio = torch.exp(-dsm_loss + old_dsm)
    should_clip = torch.where(adv > 0, ratio > 1.0 + clip, ratio < 1.0 - clip)
    dsm_loss = torch.where(should_clip, dsm_loss.detach(), dsm_loss)
    ref_dsm = (target_v - t["reference"]).square().reshape(b, -1).mean(dim=1)
    per_sample = adv * dpo_beta * (dsm_loss - ref_dsm) / group_size
    sums = torch.zeros(int(groups.max()) + 1, dtype=torch.float64).scatter_add_(0, groups, per_sample)
    return (torch.sigmoid(sums)[groups] * adv * dsm_loss).mean()


def as_float(t: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.float() for k, v in t.items()}


@pytest.mark.parametrize(("seed", "beta"), [(0, 1.0), (1, 0.1), (2, 0.5)])
def test_diffusion_nft_loss_matches_nvlabs_released_code(seed: int, beta: float) -> None:
    t = tensors(seed)
    f = as_float(t)
    noised = (1 - f["sigma"].view(-1, 1, 1, 1)) * f["clean"] + f["sigma"].view(-1, 1, 1, 1) * f["noise"]
    ours = nft_loss(f["velocity"], f["old"], noised, f["clean"], f["sigma"], f["advantages"], beta, 5.0)
    assert relative(ours, nvlabs_nft(t, beta, 5.0)) <= TOLERANCE


@pytest.mark.parametrize("weighting", ["uniform", "t", "t2", "huber", "ghuber"])
def test_awm_loss_matches_flow_factory_released_code(weighting: str) -> None:
    t = tensors(3)
    t["old"] = t["velocity"] + 0.05 * t["old"]  # near the policy: ratios around 1, some clipped
    f = as_float(t)
    target = f["noise"] - f["clean"]
    log_prob = weighted_log_prob(f["velocity"], target, f["sigma"], weighting)
    old = weighted_log_prob(f["old"], target, f["sigma"], weighting)
    ours, _ = awm_loss(log_prob, old, f["advantages"], 0.05, 1.0)
    assert relative(ours, flow_factory_awm(t, weighting, 0.05, 1.0)) <= TOLERANCE


def test_dgpo_loss_matches_flow_factory_released_code() -> None:
    t = tensors(4)
    t["old"] = t["velocity"] + 0.05 * t["old"]
    t["reference"] = t["velocity"] + 0.1 * t["reference"]
    f = as_float(t)
    groups = torch.tensor([0, 0, 0, 1, 1, 1])
    target = f["noise"] - f["clean"]
    advantages = f["advantages"].clamp(-5.0, 5.0)
    dsm, _ = clipped_denoising_loss(
        denoising_loss(target, f["velocity"]), denoising_loss(target, f["old"]), advantages, 5e-2
    )
    terms = preference_terms(dsm, denoising_loss(target, f["reference"]), advantages, 100.0, 3)
    sums = torch.zeros(2, dtype=terms.dtype).index_add_(0, groups, terms)[groups]
    ours = group_preference_loss(dsm, sums, advantages)
    assert relative(ours, flow_factory_dgpo(t, groups, 100.0, 3, 5e-2, 5.0)) <= TOLERANCE
