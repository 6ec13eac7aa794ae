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
    old_decay_rate: float  # the old policy's decay min(rate · step, cap) (0: the weights at the step's start)
    old_decay_cap: float
    samples_with_old_after: int | None  # rollouts use the old policy from this step on (None: never)
    has_ratio: bool  # the loss clips a ratio to the old policy (algorithm.clip_range applies)


FORWARD_UPSTREAM: dict[str, ForwardUpstream] = {
    # NVlabs/DiffusionNFT train_nft_sd3.py, config/nft.py: timestep_fraction 0.99, decay_type 1, sampled by "old".
    "diffusion_nft": ForwardUpstream(0.99, "per_sample_subset", True, 0.001, 0.5, 0, False),
    # Flow-Factory trainers/awm.py + AWMTrainingArguments: timestep_range 0.9, on-policy, clip_range 1e-4 (UPSTREAM).
    "awm": ForwardUpstream(0.9, "stratified_shared", False, 0.0, 0.0, None, True),
    # Luo-Yihong/DGPO config/dgpo.py, Flow-Factory trainers/dgpo.py: range 0.6, ema_ref min(0.001 s, 0.3),
    # which samples once step > 200 (switch_ema_ref), clip_range 5e-2 (UPSTREAM).
    "dgpo": ForwardUpstream(0.6, "stratified_shared", True, 0.001, 0.3, 201, True),
}

NFT_BETA = 1.0  # NVlabs config/nft.py: config.beta = 1.0
DPO_BETA = 100.0  # Luo-Yihong/DGPO config/dgpo.py: config.train.beta_dpo = 100
AWM_WEIGHTING = "ghuber"  # Flow-Factory examples/awm/lora/sd3_5/default.yaml: awm_weighting 'ghuber', power 0.25
GHUBER_POWER = 0.25

# Options only one family reads: set on the other family's algorithm, they are refused naming the field.
GRPO_ONLY = ("kl_form", "noise_level", "init_same_noise", "guard")
FORWARD_ONLY: dict[str, tuple[str, ...]] = {
    "nft_beta": ("diffusion_nft",),
    "dpo_beta": ("dgpo",),
    "awm_weighting": ("awm",),
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
