"""Each forward-family loss against an fp64 re-implementation of its released code on random tensors
(≤ 1e-6 relative): DiffusionNFT's loss block of NVlabs/DiffusionNFT scripts/train_nft_sd3.py, AWM's
``compute_weighted_log_prob`` and clipped loss of Flow-Factory trainers/awm.py, DGPO's ``_maybe_clip_dsm`` and
``_compute_group_dgpo_loss`` of Flow-Factory trainers/dgpo.py; the KL to the reference in velocity space of each
released trainer, AWM's EMA-KL and the EMA's decay (scxue/advantage_weighted_matching scripts/train_sd3_awm.py), and
when each copy of the weights follows and samples. The references are written as those lines are."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms.awm import awm_loss, weighted_log_prob
from trainer.algorithms.dgpo import clipped_denoising_loss, denoising_loss, group_preference_loss, preference_terms
from trainer.algorithms.diffusion_nft import nft_loss
from trainer.algorithms.forward import ForwardAlgorithm, velocity_kl
from trainer.algorithms.old_policy import OldPolicy
from trainer.algorithms.registry import make_algorithm
from trainer.spec import parse_spec

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


def nvlabs_kl(t: dict[str, torch.Tensor], beta: float) -> torch.Tensor:
    x0, forward_prediction, ref_forward_prediction = t["clean"], t["velocity"], t["reference"]
    kl_div_loss = ((forward_prediction - ref_forward_prediction) ** 2).mean(dim=tuple(range(1, x0.ndim)))
    return beta * torch.mean(kl_div_loss)


def scxue_awm_kls(t: dict[str, torch.Tensor], times: int, beta: float, ema_beta: float) -> torch.Tensor:
    """beta · kl_loss + ema_beta · ema_kl_loss of train_sd3_awm.py ('Uniform'), its outputs [times, batch, C, H, W]."""
    shape = (times, -1, *t["velocity"].shape[1:])
    model_output, model_output_ref = t["velocity"].reshape(shape), t["reference"].reshape(shape)
    model_output_ema = t["old"].reshape(shape)
    kl_loss = ((model_output - model_output_ref) ** 2).mean(dim=(2, 3, 4), keepdim=True)
    kl_loss = kl_loss.mean(dim=0).mean()
    ema_kl_loss = ((model_output - model_output_ema) ** 2).mean(dim=(2, 3, 4), keepdim=True)
    ema_kl_loss = ema_kl_loss.mean(dim=0).mean()
    return beta * kl_loss + ema_beta * ema_kl_loss


def flow_factory_awm_kls(t: dict[str, torch.Tensor], kl_beta: float, ema_kl_beta: float) -> torch.Tensor:
    noise_pred, ref_noise_pred, ema_noise_pred = t["velocity"], t["reference"], t["old"]
    kl_div = ((noise_pred - ref_noise_pred) ** 2).mean(dim=tuple(range(1, noise_pred.ndim)))
    ema_kl = ((noise_pred - ema_noise_pred) ** 2).mean(dim=tuple(range(1, noise_pred.ndim)))
    return kl_beta * kl_div.mean() + ema_kl_beta * ema_kl.mean()


def luo_yihong_dgpo_kl(t: dict[str, torch.Tensor], beta: float) -> torch.Tensor:
    model_v, ref_old_v, x0 = t["velocity"], t["reference"], t["clean"]
    kl_loss = 1 * (model_v - ref_old_v).square().reshape(x0.shape[0], -1).mean(dim=1)
    return beta * torch.mean(kl_loss)


@pytest.mark.parametrize("seed", [5, 6])
def test_the_kl_to_the_reference_matches_nvlabs_and_dgpos_released_code(seed: int) -> None:
    t = tensors(seed)
    f = as_float(t)
    ours = velocity_kl(f["velocity"], f["reference"])
    assert relative(1e-4 * ours, nvlabs_kl(t, 1e-4)) <= TOLERANCE
    assert relative(1e-3 * ours, luo_yihong_dgpo_kl(t, 1e-3)) <= TOLERANCE


def test_awms_kl_and_ema_kl_match_its_released_code_over_the_trained_times() -> None:
    """The native executor averages a step's K time losses (1/K each): the released code's mean over [K, B]."""
    t, times = tensors(7), 3
    f = as_float(t)
    at = [{k: v.chunk(times)[k_] for k, v in f.items()} for k_ in range(times)]  # the K times' rows
    ours = sum(1e-4 * velocity_kl(a["velocity"], a["reference"]) + velocity_kl(a["velocity"], a["old"]) for a in at)
    assert relative(ours / times, scxue_awm_kls(t, times, 1e-4, 1.0)) <= TOLERANCE
    whole = 1e-4 * velocity_kl(f["velocity"], f["reference"]) + velocity_kl(f["velocity"], f["old"])
    assert relative(whole, flow_factory_awm_kls(t, 1e-4, 1.0)) <= TOLERANCE


def algorithm(name: str, inner_epochs: int = 1, **options: object) -> ForwardAlgorithm:
    spec = parse_spec({"algorithm": {"name": name, "inner_epochs": inner_epochs, **options}}).algorithm
    made = make_algorithm(spec, torch.linspace(1, 0, spec.sampling_steps + 1), 0)
    assert isinstance(made, ForwardAlgorithm)
    return made


def nvlabs_return_decay(step: int) -> float:
    flat, uprate, uphold = 0, 0.001, 0.5  # decay_type 1
    return 0.0 if step < flat else min((step - flat) * uprate, uphold)


@pytest.mark.parametrize("inner_epochs", [1, 2])
def test_the_old_policy_and_the_ema_decay_as_the_released_loops_count_their_steps(inner_epochs: int) -> None:
    """NVlabs and AWM decay after each epoch by global_step after its increments; DGPO's ema_ref.step reads it
    before (inner_epochs 1: one optimizer step a step, as DGPO's configs update once per epoch)."""
    nft, awm, dgpo = (algorithm(name, inner_epochs) for name in ("diffusion_nft", "awm", "dgpo"))
    global_step = 0
    for step in range(1, 1501):
        dgpo_decay = min(0.3, 0.001 * global_step)
        global_step += inner_epochs
        assert nft.old_decay(step) == nvlabs_return_decay(global_step)
        assert awm.ema_decay(step) == min(0.3, 0.001 * global_step)
        assert awm.old_decay(step) == 0.0
        if inner_epochs == 1:
            assert dgpo.old_decay(step) == dgpo_decay


@pytest.mark.parametrize(("inner_epochs", "switch"), [(1, 200), (2, 200), (1, 0), (1, 7)])
def test_dgpo_samples_with_its_old_policy_once_global_step_exceeds_switch_ema_ref(
    inner_epochs: int, switch: int
) -> None:
    dgpo, nft = algorithm("dgpo", inner_epochs, switch_ema_ref=switch), algorithm("diffusion_nft", inner_epochs)
    awm = algorithm("awm", inner_epochs)
    global_step = 0
    for step in range(1, 600):
        assert dgpo.samples_with_old(step) == (global_step > switch)
        assert nft.samples_with_old(step) and not awm.samples_with_old(step)
        global_step += inner_epochs


def test_the_ema_follows_the_weights_as_awms_released_update() -> None:
    """tgt ← tgt · decay + src · (1 − decay) after each step, over 400 steps of random weights (fp32 against fp64)."""
    g = torch.Generator().manual_seed(8)
    start = [torch.randn(16, 8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)]
    awm = algorithm("awm")
    ema, reference = OldPolicy([w.float() for w in start]), [w.clone() for w in start]
    for step in range(1, 401):
        weights = [w + 0.01 * torch.randn(w.shape, generator=g, dtype=torch.float64) for w in start]
        ema.follow([w.float() for w in weights], awm.ema_decay(step))
        decay = min(0.3, 0.001 * step)
        reference = [tgt * decay + src * (1.0 - decay) for tgt, src in zip(reference, weights, strict=True)]
    assert max(relative(ours, theirs) for ours, theirs in zip(ema.weights, reference, strict=True)) <= TOLERANCE
