"""The two algorithm families and the options each one reads (docs/algorithms.md §7).

The GRPO family trains the reverse trajectory's stochastic steps by their log-probs; the forward-process
family (DiffusionNFT, AWM, DGPO) re-noises each clean sample by the forward process and trains a
flow-matching loss, so it has no trajectory log-probs, no SDE step and no ratio to the rollout's steps.
An option of one family set on the other's algorithm is refused naming it; the upstream choices of the
forward algorithms sit in ``FORWARD_UPSTREAM`` with their sources in docs/algorithms.md §7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["grpo", "forward"]
TimeDraw = Literal["per_sample_subset", "stratified_shared"]

FORWARD_ALGORITHMS = ("diffusion_nft", "awm", "dgpo")


@dataclass(frozen=True)
class ForwardUpstream:
    """A forward algorithm's choices as its released code makes them."""

    time_fraction: float  # K = max(1, ⌊fraction · T⌋) re-noising times per sample by default
    time_draw: TimeDraw  # NFT: each sample's own random K of the T grid times; Flow-Factory: K stratified, shared
    include_first: bool  # the stratified draw may pick σ_0 = 1 (Flow-Factory's 'discrete' vs 'discrete_wo_init')
    old_decay_rate: float  # the old policy's decay min(rate · (n − lag), cap) after n optimizer steps (0: on-policy)
    old_decay_cap: float
    old_decay_lag: int  # NVlabs reads the step count after its increment (0), DGPO before it (1)
    samples_with_old: bool  # rollouts may sample with the old policy (NFT always; DGPO after switch_ema_ref)
    has_ratio: bool  # the loss clips a ratio to the old policy (algorithm.clip_range applies)
    kl_beta: float  # the weight of β · mean (v_θ − v_ref)², the KL to the frozen reference in velocity space


FORWARD_UPSTREAM: dict[str, ForwardUpstream] = {
    # NVlabs/DiffusionNFT train_nft_sd3.py, config/nft.py: timestep_fraction 0.99, decay_type 1 (return_decay after
    # global_step's increment), sampled by "old", config.train.beta 1e-4.
    "diffusion_nft": ForwardUpstream(0.99, "per_sample_subset", True, 0.001, 0.5, 0, True, False, 1e-4),
    # Flow-Factory trainers/awm.py + AWMTrainingArguments: timestep_range 0.9, on-policy, clip_range 1e-4 (UPSTREAM);
    # examples/awm/lora/sd3_5/default.yaml: kl_beta 1e-4.
    "awm": ForwardUpstream(0.9, "stratified_shared", False, 0.0, 0.0, 0, False, True, 1e-4),
    # Luo-Yihong/DGPO config/dgpo.py, train_sd3_dgpo.py, Flow-Factory trainers/dgpo.py: range 0.6, ema_ref
    # min(0.001 · global_step, 0.3) before its increment, sampled once global_step > switch_ema_ref,
    # clip_range 5e-2 (UPSTREAM); README's recipe and Flow-Factory examples/dgpo/lora/sd3_5: train.beta 1e-3.
    "dgpo": ForwardUpstream(0.6, "stratified_shared", True, 0.001, 0.3, 1, True, True, 1e-3),
}

NFT_BETA = 1.0  # NVlabs config/nft.py: config.beta = 1.0
DPO_BETA = 100.0  # Luo-Yihong/DGPO config/dgpo.py: config.train.beta_dpo = 100
AWM_WEIGHTING = "ghuber"  # Flow-Factory examples/awm/lora/sd3_5/default.yaml: awm_weighting 'ghuber', power 0.25
GHUBER_POWER = 0.25
# scxue/advantage_weighted_matching config/dgx_awm.py (train.ema_beta 1, kl_ema_decay 0.3 'linear') and
# scripts/train_sd3_awm.py: the KL to an EMA of the policy, which follows after every step with
# d = min(0.001 · global_step, 0.3) (global_step after its increment).
AWM_EMA_KL_BETA = 1.0
AWM_EMA_DECAY_RATE = 0.001
AWM_EMA_DECAY_CAP = 0.3
# Luo-Yihong/DGPO config/dgpo.py and Flow-Factory DGPOTrainingArguments: switch_ema_ref 200.
DGPO_SWITCH_EMA_REF = 200

# Options only one family reads: set on the other family's algorithm, they are refused naming the field.
GRPO_ONLY = ("kl_form", "noise_level", "init_same_noise", "guard")
FORWARD_ONLY: dict[str, tuple[str, ...]] = {
    "nft_beta": ("diffusion_nft",),
    "dpo_beta": ("dgpo",),
    "awm_weighting": ("awm",),
    "ema_kl_beta": ("awm",),
    "switch_ema_ref": ("dgpo",),
}


def family_of(algorithm: str) -> Family:
    return "forward" if algorithm in FORWARD_ALGORITHMS else "grpo"


def family_options(algorithm: str) -> frozenset[str]:
    """The options ``algorithm`` reads that the other family's algorithms refuse (or, for ``sampler``, hold
    at 'sde'): the GRPO family's step, ratio and sampler; a forward algorithm's own β or weighting, and
    ``clip_range`` where its loss has a ratio. Forms and references show them with the algorithm's own."""
    if family_of(algorithm) == "grpo":
        return frozenset({*GRPO_ONLY, "clip_range", "sampler"})
    own = {name for name, owners in FORWARD_ONLY.items() if algorithm in owners}
    return frozenset(own | ({"clip_range"} if FORWARD_UPSTREAM[algorithm].has_ratio else set()))


def default_times(algorithm: str, sampling_steps: int) -> int:
    """K re-noising times per sample: ⌊fraction · T⌋ of the rollout's T grid times, at least 1."""
    return max(1, int(FORWARD_UPSTREAM[algorithm].time_fraction * sampling_steps))
