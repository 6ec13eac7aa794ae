"""Name → reward function, the weighted sum over a spec's reward list, and third-party plugins.

A reward is ``fn(images, prompts) -> scores``: images NCHW float in [0, 1], one float score
per image; or ``-> (scores, {sub: scores})`` with named sub-scores, logged as ``reward/<name>/<sub>``
(the remote reward passes on those of its server). A factory ``make(path, device) -> fn`` builds it
(model-based rewards load their weights from ``path``). Plugins register a factory under the
``sfumato.rewards`` entry point group. A remote reward is logged under the name its server gives
(``reward/brightness``, not ``reward/remote``); a name that two entries of one spec share is told apart by its
place (``brightness``, ``brightness_2``).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

import torch

from trainer.rewards.aesthetic import make_aesthetic
from trainer.rewards.brightness import brightness
from trainer.rewards.clip_score import make_clip_score
from trainer.rewards.colorfulness import colorfulness
from trainer.rewards.geneval import geneval, make_geneval
from trainer.rewards.hpsv2 import make_hpsv2
from trainer.rewards.imagereward import make_imagereward
from trainer.rewards.jpeg_compressibility import jpeg_compressibility
from trainer.rewards.jpeg_incompressibility import jpeg_incompressibility
from trainer.rewards.ocr import make_ocr
from trainer.rewards.orange_background import orange_background
from trainer.rewards.pickscore import make_pickscore
from trainer.rewards.prompt_color_match import prompt_color_match
from trainer.rewards.remote import RemoteReward
from trainer.rewards.vlm_judge import VlmJudge
from trainer.spec import REMOTE_REWARD, REWARD_ENTRY_POINT_GROUP, SERVICE_REWARD, VLM_JUDGE, RewardSpec, SpecError
from trainer.spec.geneval_options import GENEVAL

RewardOutput = torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]
RewardFn = Callable[[torch.Tensor, list[str]], RewardOutput]
RewardFactory = Callable[[str | None, torch.device], RewardFn]
ModelRewardFactory = Callable[[str, torch.device], RewardFn]

PIXEL_REWARD_FUNCTIONS: dict[str, RewardFn] = {
    "brightness": brightness,
    "colorfulness": colorfulness,
    "jpeg_compressibility": jpeg_compressibility,
    "jpeg_incompressibility": jpeg_incompressibility,
    "orange_background": orange_background,
    "prompt_color_match": prompt_color_match,
    "geneval": geneval,
}

# Rewards from pixels that set up an engine of their own (a host without it fails when the job builds its rewards).
ENGINE_REWARD_FACTORIES: dict[str, Callable[[torch.device], RewardFn]] = {
    "ocr": make_ocr,
}

MODEL_REWARD_FACTORIES: dict[str, ModelRewardFactory] = {
    "clip_score": make_clip_score,
    "pickscore": make_pickscore,
    "hpsv2": make_hpsv2,
    "aesthetic": make_aesthetic,
    "imagereward": make_imagereward,
}


def make_reward(name: str, path: str | None, device: torch.device) -> RewardFn:
    if name in PIXEL_REWARD_FUNCTIONS:
        return PIXEL_REWARD_FUNCTIONS[name]
    if name in ENGINE_REWARD_FACTORIES:
        return ENGINE_REWARD_FACTORIES[name](device)
    if name in MODEL_REWARD_FACTORIES:
        if path is None:
            raise ValueError(f"reward.path: {name!r} loads a model from a local directory")
        return MODEL_REWARD_FACTORIES[name](path, device)
    for point in entry_points(group=REWARD_ENTRY_POINT_GROUP):
        if point.name == name:
            factory: RewardFactory = point.load()
            return factory(path, device)
    if name == SERVICE_REWARD:
        raise ValueError("reward.name: a 'service' reward is resolved by the platform when it starts the job")
    raise ValueError(f"reward.name: unknown reward {name!r}")


def load_reward(spec: RewardSpec, device: torch.device) -> RewardFn:
    """A model that exists but does not load is a spec error naming ``reward.path``."""
    if spec.name == REMOTE_REWARD:
        return RemoteReward(spec)
    if spec.name == VLM_JUDGE:
        return VlmJudge(spec)
    try:
        if spec.name == GENEVAL:  # its detector options are the spec's
            return make_geneval(spec, device)
        return make_reward(spec.name, spec.path, device)
    except SpecError:
        raise  # already names its field
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        if spec.path is None:
            raise
        raise SpecError("reward.path", f"{spec.name!r} does not load from {spec.path}: {exc}") from exc


class WeightedReward:
    """Σ_k w_k r_k for advantages, with every raw r_k kept for logging as ``reward/<name>`` (and its
    sub-scores as ``reward/<name>/<sub>``, which weigh nothing). The scores are on the images' device (a reward
    scored elsewhere, a remote one, is moved there): advantages are made there, and the host reads them once per
    step for logging, never once per sample."""

    def __init__(self, specs: list[RewardSpec], device: torch.device) -> None:
        functions = [load_reward(spec, device) for spec in specs]
        served = [
            fn.served_name() if isinstance(fn, RemoteReward) else spec.name
            for spec, fn in zip(specs, functions, strict=True)
        ]
        self.names = distinct(served)
        self.parts = [(name, spec.weight, fn) for name, spec, fn in zip(self.names, specs, functions, strict=True)]

    @torch.no_grad()
    def __call__(self, images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Images [B, 3, H, W], or videos [B, F, 3, H, W]: each frame is scored, a video gets the mean."""
        frames = 1
        if images.dim() == 5:
            frames = images.shape[1]
            images = images.flatten(0, 1)
            prompts = [prompt for prompt in prompts for _ in range(frames)]
        raw: dict[str, torch.Tensor] = {}
        for name, _, fn in self.parts:
            output = fn(images, prompts)
            scores, subs = output if isinstance(output, tuple) else (output, {})
            raw[name] = scores.float().to(images.device).reshape(-1, frames).mean(dim=1)
            for sub, values in subs.items():
                raw[f"{name}/{sub}"] = values.float().to(images.device).reshape(-1, frames).mean(dim=1)
        total = sum(weight * raw[name] for name, weight, _ in self.parts)
        return total, raw  # type: ignore[return-value]


def distinct(names: list[str]) -> list[str]:
    """The names, the second and later holders of one suffixed with their count (``a``, ``a_2``), so no two parts
    of a step share a metric."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out
