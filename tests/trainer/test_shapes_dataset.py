"""The shapes dataset draws what its captions say, and its captions are the builtin:shapes prompt set but the one
in ten held out for evaluations (builtin:shapes-heldout)."""

from __future__ import annotations

import torch

from trainer.models.shapes_dataset import PALETTE, ShapeScene, all_captions, random_batch, render, vocabulary
from trainer.prompts import load_prompts


def test_every_caption_uses_only_vocabulary_words_and_is_a_prompt() -> None:
    captions = all_captions()
    assert len(captions) == len(set(captions)) == 2 * 6 * 3 * 9 * 5
    assert {word for caption in captions for word in caption.split()} == set(vocabulary())
    assert sorted(load_prompts("builtin:shapes") + load_prompts("builtin:shapes-heldout")) == sorted(captions)


def test_the_held_out_captions_are_one_in_ten_no_training_prompt_and_cover_every_attribute() -> None:
    training, held_out = load_prompts("builtin:shapes"), load_prompts("builtin:shapes-heldout")
    assert len(held_out) == 162 and not set(held_out) & set(training)
    words = {word for caption in held_out for word in caption.split()}
    assert set(PALETTE) | {"small", "large", "circle", "square", "triangle", "top", "bottom", "left", "right"} <= words


def test_rendered_shape_has_its_colour_at_its_place_and_the_background_elsewhere() -> None:
    scene = ShapeScene("small", "red", "triangle", 2, 0, "blue")
    image = render(scene)
    x, y = (int(v) for v in scene.centre())
    assert torch.allclose(image[:, y, x], torch.tensor(PALETTE["red"]))
    assert torch.allclose(image[:, 0, 31], torch.tensor(PALETTE["blue"]))


def test_a_seed_gives_the_same_batch() -> None:
    first, captions = random_batch(4, torch.Generator().manual_seed(3))
    second, again = random_batch(4, torch.Generator().manual_seed(3))
    assert torch.equal(first, second) and captions == again
