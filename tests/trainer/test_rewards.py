"""Every pixel reward orders fixed images the way its name says."""

from __future__ import annotations

import torch

from trainer.rewards.registry import PIXEL_REWARD_FUNCTIONS, WeightedReward
from trainer.spec import RewardSpec


def solid(rgb: tuple[float, float, float], size: int = 32) -> torch.Tensor:
    return torch.tensor(rgb).reshape(3, 1, 1).expand(3, size, size).clone()


def noise_image(seed: int = 0, size: int = 32) -> torch.Tensor:
    return torch.rand(3, size, size, generator=torch.Generator().manual_seed(seed))


def test_brighter_image_scores_higher_on_brightness() -> None:
    scores = PIXEL_REWARD_FUNCTIONS["brightness"](torch.stack([solid((0.2,) * 3), solid((0.8,) * 3)]), ["", ""])
    assert scores[1] > scores[0]


def test_saturated_image_is_more_colorful_than_grey() -> None:
    scores = PIXEL_REWARD_FUNCTIONS["colorfulness"](torch.stack([solid((0.5,) * 3), noise_image()]), ["", ""])
    assert scores[1] > scores[0]


def test_flat_image_is_more_jpeg_compressible_than_noise() -> None:
    images = torch.stack([solid((0.3, 0.4, 0.5)), noise_image()])
    compress = PIXEL_REWARD_FUNCTIONS["jpeg_compressibility"](images, ["", ""])
    incompress = PIXEL_REWARD_FUNCTIONS["jpeg_incompressibility"](images, ["", ""])
    assert compress[0] > compress[1]
    assert incompress[1] > incompress[0]


def test_red_image_matches_a_red_apple_better_than_a_blue_image() -> None:
    red, blue = solid((0.9, 0.1, 0.1)), solid((0.1, 0.1, 0.9))
    scores = PIXEL_REWARD_FUNCTIONS["prompt_color_match"](torch.stack([red, blue]), ["a red apple"] * 2)
    assert scores[0] > scores[1]
    grey_background = solid((0.5, 0.5, 0.5))
    grey_background[:, 8:24, 8:24] = solid((0.9, 0.1, 0.1), 16)
    match = PIXEL_REWARD_FUNCTIONS["prompt_color_match"]
    scores = match(torch.stack([grey_background] * 2), ["a red apple", "a blue car"])
    assert scores[0] > scores[1]


def test_prompt_without_a_colour_scores_zero() -> None:
    scores = PIXEL_REWARD_FUNCTIONS["prompt_color_match"](solid((0.9, 0.1, 0.1)).unsqueeze(0), ["a photo"])
    assert float(scores[0]) == 0.0


def test_weighted_reward_sums_by_weight_and_keeps_each_part() -> None:
    specs = [RewardSpec(name="brightness", weight=2.0), RewardSpec(name="prompt_color_match", weight=-1.0)]
    reward = WeightedReward(specs, torch.device("cpu"))
    images = torch.stack([solid((0.9, 0.1, 0.1)), solid((0.1, 0.1, 0.9))])
    total, parts = reward(images, ["a red apple", "a red apple"])
    assert set(parts) == {"brightness", "prompt_color_match"}
    assert torch.allclose(total, 2 * parts["brightness"] - parts["prompt_color_match"])


def test_orange_background_scores_the_border_not_the_shape() -> None:
    orange_ring = solid((1.0, 0.55, 0.0))
    orange_ring[:, 1:-1, 1:-1] = torch.tensor((0.1, 0.2, 0.9)).reshape(3, 1, 1)  # a blue shape filling the inside
    black = solid((0.0, 0.0, 0.0))
    scores = PIXEL_REWARD_FUNCTIONS["orange_background"](torch.stack([orange_ring, black]), ["", ""])
    assert abs(float(scores[0]) - 1.0) < 1e-6 and abs(float(scores[1]) - 0.342) < 1e-3
