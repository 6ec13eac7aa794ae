"""The ``algorithm`` section: the objective (the GRPO family: Flow-GRPO, Flow-GRPO-Fast, DanceGRPO, Flash-GRPO,
MixGRPO, MixGRPO-Flash; the forward-process family: DiffusionNFT, AWM, DGPO) and its numbers.

Where an algorithm's upstream code fixes a choice (its trained steps, its advantage std, its KL form,
whether it has a CPS step), ``UPSTREAM`` holds it and a field left unset takes it; docs/algorithms.md
gives the source of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import Field, model_validator

from trainer.spec.base import Section, SpecProblems
from trainer.spec.forward_family import (
    AWM_EMA_KL_BETA,
    AWM_WEIGHTING,
    DGPO_SWITCH_EMA_REF,
    DPO_BETA,
    FORWARD_ONLY,
    FORWARD_UPSTREAM,
    GRPO_ONLY,
    NFT_BETA,
    Family,
    default_times,
    family_of,
)

AlgorithmName = Literal[
    "flow_grpo",
    "flow_grpo_fast",
    "dance_grpo",
    "flash_grpo",
    "mix_grpo",
    "mix_grpo_flash",
    "diffusion_nft",
    "awm",
    "dgpo",
]
ALGORITHMS: tuple[str, ...] = get_args(AlgorithmName)

Sampler = Literal["sde", "cps"]
KlForm = Literal["flow_grpo", "exact"]
AwmWeighting = Literal["uniform", "t", "t2", "huber", "ghuber"]
WindowSchedule = Literal["progressive", "random"]


@dataclass(frozen=True)
class Upstream:
    """An algorithm's choices as its released code makes them."""

    trained_fraction: float  # K = ⌊fraction · (T − 1)⌋ trained steps by default (at least 1)
    global_std: bool  # advantages divided by the whole step's reward std, or by each group's
    unbiased_std: bool  # that std divides by n − 1 (torch.std) rather than n (numpy.std)
    advantage_eps: float  # added to the std
    kl_form: KlForm
    samplers: tuple[Sampler, ...]  # the step forms its code offers
    noise_level: float  # a (Flow-GRPO) or η (DanceGRPO); Flash-GRPO's g = σ_1 σ does not read it
    clip_range: float
    init_same_noise: bool  # one starting noise per group (every member starts from the same latent)
    guard: bool = False  # its step is Flow-GRPO's Gaussian, the one GRPO-Guard's ratio is written for


UPSTREAM: dict[str, Upstream] = {
    "flow_grpo": Upstream(1.0, True, False, 1e-4, "flow_grpo", ("sde", "cps"), 0.7, 1e-4, False, guard=True),
    "flow_grpo_fast": Upstream(1.0, True, False, 1e-4, "flow_grpo", ("sde", "cps"), 0.7, 1e-4, False, guard=True),
    "dance_grpo": Upstream(0.6, False, True, 1e-8, "flow_grpo", ("sde",), 0.3, 1e-4, True),
    "flash_grpo": Upstream(1.0, True, False, 1e-4, "exact", ("sde",), 0.7, 1e-3, False),
    "mix_grpo": Upstream(1.0, False, True, 1e-8, "flow_grpo", ("sde",), 0.7, 1e-4, True, guard=True),
    "mix_grpo_flash": Upstream(1.0, False, True, 1e-8, "flow_grpo", ("sde",), 0.7, 1e-4, True, guard=True),
    # The forward family: only the advantage statistics apply (their step fields are unused placeholders).
    "diffusion_nft": Upstream(0.99, False, False, 1e-4, "flow_grpo", ("sde",), 0.7, 1e-4, False),
    "awm": Upstream(0.9, True, False, 1e-4, "flow_grpo", ("sde",), 0.7, 1e-4, False),
    "dgpo": Upstream(0.6, True, False, 1e-4, "flow_grpo", ("sde",), 0.7, 5e-2, False),
}

# MixGRPO's sliding window as its released scripts set it: (window_size, window_shift_interval, window_stride).
MIX_WINDOW: dict[str, tuple[int, int, int]] = {"mix_grpo": (4, 25, 1), "mix_grpo_flash": (4, 20, 1)}
MIX_OPTIONS = frozenset({"window_size", "window_shift_interval", "window_stride", "window_schedule"})

# Fields that, left unset, take the algorithm's upstream value.
UPSTREAM_FIELDS = ("global_std", "unbiased_std", "kl_form", "noise_level", "clip_range", "init_same_noise")

# Options only some algorithms read.
ALGORITHM_OPTIONS: dict[str, frozenset[str]] = {
    "flow_grpo": frozenset(),
    "flow_grpo_fast": frozenset({"window_size", "window_range"}),
    "dance_grpo": frozenset(),
    "flash_grpo": frozenset({"candidate_steps"}),
    "mix_grpo": MIX_OPTIONS,
    "mix_grpo_flash": MIX_OPTIONS | {"ode_compression"},
    "diffusion_nft": frozenset(),
    "awm": frozenset(),
    "dgpo": frozenset(),
}


class AlgorithmSpec(Section):
    name: AlgorithmName = "flow_grpo"
    sampling_steps: int = Field(10, ge=2, le=1000, description="T, denoising steps per rollout")
    train_timesteps: int | None = Field(
        None,
        ge=1,
        description="K, trained steps per sample; must be < sampling_steps (default T-1; dance_grpo ⌊0.6 (T-1)⌋)",
    )
    group_size: int = Field(4, ge=2, le=1024, description="G, samples per prompt")
    prompts_per_step: int = Field(2, ge=1, le=4096, description="prompts per optimizer step")
    total_steps: int = Field(10, ge=1, le=10_000_000, description="optimizer steps")
    learning_rate: float = Field(3e-4, gt=0, le=1.0)
    noise_level: float | None = Field(
        None,
        gt=0,
        le=5.0,
        description="SDE level: a (flow_grpo, flow_grpo_fast), eta (dance_grpo); default 0.7, dance_grpo 0.3",
    )
    clip_range: float | None = Field(None, gt=0, le=1.0, description="ratio clip; default 1e-4, flash_grpo 1e-3")
    init_same_noise: bool | None = Field(
        None,
        description="every member of a prompt's group starts from the same initial noise (the steps' noise "
        "still differs per sample); default: true for dance_grpo, false otherwise",
    )
    kl_beta: float | None = Field(
        None,
        ge=0,
        description="β of the KL to the frozen reference; default 0, diffusion_nft and awm 1e-4, dgpo 1e-3 "
        "(their released trainers' β · mean (v_θ − v_ref)²)",
    )
    adv_clip: float = Field(5.0, gt=0)
    global_std: bool | None = Field(
        None,
        description="divide advantages by the std of the whole step's rewards (true) or of each prompt's group "
        "(false); default: true, dance_grpo false",
    )
    unbiased_std: bool | None = Field(
        None, description="that std divides by n - 1 rather than n; default: false, dance_grpo true"
    )
    sampler: Sampler = Field(
        "sde",
        description="the stochastic step: 'sde' (the algorithm's Gaussian step) or 'cps' (flow_grpo, flow_grpo_fast)",
    )
    kl_form: KlForm | None = Field(
        None,
        description="the KL term's divisor: 'flow_grpo' (2g², Flow-GRPO's code) or 'exact' (2τ², the Gaussians' KL); "
        "default: exact for flash_grpo, flow_grpo otherwise",
    )
    cfg_scale: float = Field(1.0, ge=1.0, le=30.0, description="1.0 disables classifier-free guidance")
    shift: float | None = Field(
        None, gt=0, le=100.0, description="schedule shift s; overrides the checkpoint's scheduler config"
    )
    max_grad_norm: float = Field(1.0, gt=0)
    inner_epochs: int = Field(1, ge=1, le=16)
    window_size: int | None = Field(
        None, ge=1, description="flow_grpo_fast, mix_grpo, mix_grpo_flash: SDE window length (mix_grpo default 4)"
    )
    window_shift_interval: int | None = Field(
        None,
        ge=1,
        description="mix_grpo, mix_grpo_flash: optimizer steps before a progressive window moves "
        "(default 25; mix_grpo_flash 20)",
    )
    window_stride: int | None = Field(
        None, description="mix_grpo, mix_grpo_flash: steps a progressive window moves by (default 1)"
    )
    window_schedule: WindowSchedule | None = Field(
        None,
        description="mix_grpo, mix_grpo_flash: 'progressive' (the window slides from the first step, then rolls "
        "back) or 'random' (a uniformly drawn start each step; mix_grpo only); default progressive",
    )
    ode_compression: float | None = Field(
        None,
        gt=0,
        le=1,
        description="mix_grpo_flash: the steps after the window shrink to this fraction of their number, solved by "
        "DPM-Solver++ (2M); default 0.4",
    )
    guard: bool = Field(
        False,
        description="GRPO-Guard: the ratio normalised by the step's std, which reweights the steps' gradients "
        "(flow_grpo, flow_grpo_fast, mix_grpo, mix_grpo_flash with sampler 'sde')",
    )
    window_range: tuple[int, int] | None = Field(None, description="flow_grpo_fast: [start, end) of window starts")
    candidate_steps: int | None = Field(
        None, ge=1, description="flash_grpo: steps 0..n-1 a prompt's step is drawn from"
    )
    nft_beta: float | None = Field(
        None,
        gt=0,
        le=1.0,
        description="diffusion_nft: β of the implicit policies v_old ± β (v_θ − v_old), in (0, 1]; default 1.0",
    )
    dpo_beta: float | None = Field(None, gt=0, description="dgpo: β of the group preference's sigmoid; default 100")
    awm_weighting: AwmWeighting | None = Field(
        None, description="awm: the matching loss's weighting over σ; default 'ghuber' (power 0.25)"
    )
    ema_kl_beta: float | None = Field(
        None,
        ge=0,
        description="awm: weight of mean (v_θ − v_ema)², the KL to an EMA of the policy that follows it after "
        "every step with decay min(0.001 · steps, 0.3); 0 turns it off; default 1",
    )
    switch_ema_ref: int | None = Field(
        None,
        ge=0,
        le=10_000_000,
        description="dgpo: rollouts sample with the old (EMA) policy once more than this many optimizer steps are "
        "done; allowed 0..10000000; default 200",
    )
    rollout_chunks: int = Field(
        1,
        ge=1,
        le=64,
        description="roll each rank's samples out in this many chunks, scoring a chunk's rewards on a background "
        "thread while the next one samples (trained steps forward in the same chunks)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> AlgorithmSpec:
        """The algorithm's own options and step choices, all checked: the problems are reported together."""
        problems = SpecProblems("AlgorithmSpec")
        self._family_options(problems)
        for option in sorted(set().union(*ALGORITHM_OPTIONS.values()) - ALGORITHM_OPTIONS[self.name]):
            if getattr(self, option) is not None:
                users = ", ".join(name for name, options in ALGORITHM_OPTIONS.items() if option in options)
                problems.add(option, f"does not apply to algorithm {self.name!r}; it applies to {users}")
        upstream = UPSTREAM[self.name]
        if self.sampler not in upstream.samplers:
            allowed = ", ".join(upstream.samplers)
            message = f"{self.name} has no {self.sampler!r} step in its upstream code; allowed: {allowed}"
            problems.add("sampler", message)
        for name in UPSTREAM_FIELDS:
            # The GRPO family's step options stay unset on a forward algorithm: its resolved spec, stored by the
            # server and read back by the trainer, must not hold options that the family refuses.
            if getattr(self, name) is None and not (self.family == "forward" and name in GRPO_ONLY):
                setattr(self, name, getattr(upstream, name))
        if self.kl_beta is None:
            self.kl_beta = FORWARD_UPSTREAM[self.name].kl_beta if self.family == "forward" else 0.0
        last = self.sampling_steps - 1
        if self.name == "flow_grpo_fast":
            self._window(last, problems)
        if self.name == "flash_grpo":
            self._candidates(last, problems)
        if self.name in MIX_WINDOW:
            self._mix_window(problems)
        if self.guard:
            self._guard(upstream, problems)
        if self.family == "forward":
            self._forward_defaults(problems)
        if self.train_timesteps is None:
            self.train_timesteps = max(1, math.floor(upstream.trained_fraction * last))
        too_many = self.train_timesteps >= self.sampling_steps and self.family == "grpo"
        if too_many and "train_timesteps" not in problems:
            problems.add(
                "train_timesteps",
                f"must be less than sampling_steps ({self.sampling_steps}): the near-clean last step is never trained; "
                f"allowed 1..{last}",
            )
        problems.raise_all()
        return self

    @property
    def family(self) -> Family:
        """'grpo' (trains the reverse trajectory's steps) or 'forward' (re-noises clean samples)."""
        return family_of(self.name)

    def _family_options(self, problems: SpecProblems) -> None:
        """An option of the other family, set by the user, is refused naming it (checked before upstream fills)."""
        if self.family == "forward":
            grpo_set = [name for name in GRPO_ONLY if getattr(self, name, None) not in (None, False)]
            if not FORWARD_UPSTREAM[self.name].has_ratio and self.clip_range is not None:
                grpo_set.append("clip_range")
            for name in grpo_set:
                message = f"is an option of the GRPO family's SDE step and ratio; {self.name} re-noises clean samples"
                problems.add(name, message)
            if self.sampler != "sde":
                problems.add("sampler", f"{self.name} trains on the forward process: it has no {self.sampler!r} step")
        for name, owners in FORWARD_ONLY.items():
            if getattr(self, name) is not None and self.name not in owners:
                problems.add(name, f"does not apply to algorithm {self.name!r}; it applies to {', '.join(owners)}")

    def _forward_defaults(self, problems: SpecProblems) -> None:
        """K re-noising times of the T grid times (1..T), and each forward algorithm's own defaults."""
        if self.train_timesteps is None:
            self.train_timesteps = default_times(self.name, self.sampling_steps)
        if self.train_timesteps > self.sampling_steps:
            message = f"the re-noising times are drawn from the {self.sampling_steps} grid times; allowed 1.."
            problems.add("train_timesteps", message + str(self.sampling_steps))
        if self.name == "diffusion_nft":
            self.nft_beta = NFT_BETA if self.nft_beta is None else self.nft_beta
            self.clip_range = None
        if self.name == "dgpo":
            self.dpo_beta = DPO_BETA if self.dpo_beta is None else self.dpo_beta
            self.switch_ema_ref = DGPO_SWITCH_EMA_REF if self.switch_ema_ref is None else self.switch_ema_ref
        if self.name == "awm":
            self.awm_weighting = self.awm_weighting or AWM_WEIGHTING
            self.ema_kl_beta = AWM_EMA_KL_BETA if self.ema_kl_beta is None else self.ema_kl_beta

    def _window(self, last: int, problems: SpecProblems) -> None:
        """Window of w SDE steps, trained, starting in [r0, r1); it must end before the last step."""
        if self.window_size is None:
            self.window_size = min(self.train_timesteps or 3, 3, last)
        if self.window_size > last:
            problems.add("window_size", f"must be at most sampling_steps - 1 = {last}")
            return
        if self.train_timesteps not in (None, self.window_size):
            message = f"flow_grpo_fast trains its window: leave it unset or {self.window_size}"
            problems.add("train_timesteps", message)
        self.train_timesteps = self.window_size
        if self.window_range is None:
            self.window_range = (0, max(1, self.sampling_steps // 2 - self.window_size + 1))
        low, high = self.window_range
        if not 0 <= low < high:
            problems.add("window_range", "must be [start, end) with 0 <= start < end")
        elif high - 1 + self.window_size > last:
            problems.add(
                "window_range",
                f"a window starting at {high - 1} would train step {high - 2 + self.window_size}; "
                f"the last trainable step is {last - 1}, so end must be at most {last - self.window_size + 1}",
            )

    def _mix_window(self, problems: SpecProblems) -> None:
        """MixGRPO's window of SDE steps, trained; upstream keeps it within steps 0..T-3 (max_timesteps T - 2)."""
        size, interval, stride = MIX_WINDOW[self.name]
        self.window_size = size if self.window_size is None else self.window_size
        self.window_shift_interval = self.window_shift_interval or interval
        self.window_stride = stride if self.window_stride is None else self.window_stride
        self.window_schedule = self.window_schedule or "progressive"
        if self.name == "mix_grpo_flash":
            self.ode_compression = self.ode_compression or 0.4
            if self.window_schedule != "progressive":
                message = "mix_grpo_flash solves the steps after a progressive window (as upstream asserts); "
                problems.add("window_schedule", message + "allowed: progressive")
        limit = self.sampling_steps - 2
        if limit < 1:
            problems.add("sampling_steps", f"{self.name} needs at least 3 steps: its window lies in steps 0..T-3")
            return
        if self.window_size > limit:
            message = f"must be at most sampling_steps - 2 = {limit}: the window lies in steps 0..{limit - 1}"
            problems.add("window_size", f"{message}; allowed 1..{limit}")
            return
        if self.train_timesteps not in (None, self.window_size):
            problems.add("train_timesteps", f"{self.name} trains its window: leave it unset or {self.window_size}")
        self.train_timesteps = self.window_size
        starts = limit - self.window_size
        if not 1 <= self.window_stride <= max(1, starts):
            problems.add("window_stride", f"must be in 1..{max(1, starts)}: the window's starts are 0..{starts}")

    def _guard(self, upstream: Upstream, problems: SpecProblems) -> None:
        """GRPO-Guard's ratio is written for Flow-GRPO's Gaussian step, at the rollout's weights."""
        allowed = ", ".join(name for name, up in UPSTREAM.items() if up.guard)
        if not upstream.guard:
            problems.add("guard", f"GRPO-Guard is written for Flow-GRPO's SDE step; allowed with {allowed}")
        elif self.sampler != "sde":
            problems.add("guard", "GRPO-Guard is written for Flow-GRPO's SDE step; allowed with sampler 'sde'")
        if self.inner_epochs != 1:
            message = "GRPO-Guard's old step mean is the rollout's, which the trainer has only while the weights are "
            problems.add("guard", message + "the rollout's: it needs inner_epochs 1")

    def _candidates(self, last: int, problems: SpecProblems) -> None:
        """One trained step per prompt, drawn from steps 0..candidate_steps-1."""
        if self.candidate_steps is None:
            self.candidate_steps = max(1, self.sampling_steps // 2)
        if self.candidate_steps > last:
            message = f"must be at most sampling_steps - 1 = {last}: the last step is never trained"
            problems.add("candidate_steps", message)
        if self.train_timesteps not in (None, 1):
            problems.add("train_timesteps", "flash_grpo trains exactly one step per sample: leave it unset or 1")
        self.train_timesteps = 1

    @property
    def advantage_eps(self) -> float:
        """ε added to the advantages' std, as the algorithm's upstream code adds it."""
        return UPSTREAM[self.name].advantage_eps
