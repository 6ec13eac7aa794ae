"""The geneval reward: GenEval's checks (presence, count, colour, position) on the shape detector's objects, which
are exact on the images the shapes dataset draws."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from trainer.models.shapes_dataset import JITTER, PALETTE, ShapeScene, random_scenes, render, shape_mask
from trainer.prompts import load_prompts
from trainer.rewards.geneval import geneval
from trainer.rewards.registry import WeightedReward
from trainer.rewards.shape_detector import detect_shapes
from trainer.shapes_geneval_prompts import metadata_by_caption, shapes_geneval_metadata
from trainer.spec import JobSpec, RewardSpec, parse_spec, spec_errors

RED_CIRCLE_TOP_LEFT = ShapeScene("small", "red", "circle", 0, 0, "black")


def two_shapes(first: ShapeScene, second: ShapeScene) -> torch.Tensor:
    """Both scenes' shapes on the first one's background (their places must not overlap)."""
    background = torch.tensor(PALETTE[first.background]).view(3, 1, 1)
    image = background.expand(3, 32, 32).clone()
    for scene in (first, second):
        image += (torch.tensor(PALETTE[scene.color]).view(3, 1, 1) - background) * shape_mask(scene)
    return image


def scored(image: torch.Tensor, prompt: str) -> dict[str, float]:
    scores, subs = geneval(image.unsqueeze(0), [prompt])
    return {"score": float(scores[0]), **{name: float(values[0]) for name, values in subs.items()}}


def test_the_detector_reads_every_drawn_scene_exactly() -> None:
    generator = torch.Generator().manual_seed(7)
    scenes = random_scenes(150, generator)
    offsets = (torch.rand(len(scenes), 2, generator=generator) * 2 - 1) * JITTER
    for scene, offset in zip(scenes, offsets, strict=True):
        detections, background = detect_shapes(render(scene, *offset.tolist()))
        read = [(d.shape, d.color, d.size, d.row, d.column) for d in detections]
        assert read == [(scene.shape, scene.color, scene.size, scene.row, scene.column)], scene
        assert background == scene.background


def test_a_shaded_shape_reads_as_the_colour_of_most_of_its_pixels() -> None:
    """The shapes model's shapes have darker patches; the darkest pixels do not decide the colour."""
    scene = ShapeScene("large", "green", "circle", 1, 1, "yellow")
    image = render(scene)
    image[:, 12:16, 12:20] = torch.tensor([0.05, 0.3, 0.05]).view(3, 1, 1)  # nearer black than green
    detections, _ = detect_shapes(image)
    assert [d.color for d in detections] == ["green"]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (RED_CIRCLE_TOP_LEFT.caption, (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)),
        ("a small blue circle at the top left on a black background", (0.8, 1.0, 1.0, 0.0, 1.0, 0.0)),
        ("a small red circle at the bottom right on a black background", (0.8, 1.0, 1.0, 1.0, 0.0, 0.0)),
        # presence ✗, count (exactly one square) ✗, exclude (fewer than two squares) ✓, colour ✗, position ✗: 1 of 5
        ("a small red square at the top left on a black background", (0.2, 0.0, 0.5, 0.0, 0.0, 0.0)),
    ],
    ids=["as-captioned", "wrong-colour", "wrong-place", "missing-class"],
)
def test_a_red_circle_at_the_top_left_scores_each_check_of_the_prompt(prompt: str, expected: tuple[float, ...]) -> None:
    result = scored(render(RED_CIRCLE_TOP_LEFT), prompt)
    names = ("score", "presence", "count", "color", "position", "correct")
    assert result == pytest.approx(dict(zip(names, expected, strict=True)))


def test_two_of_the_class_fail_the_count_of_one() -> None:
    second = ShapeScene("small", "red", "circle", 2, 2, "black")
    result = scored(two_shapes(RED_CIRCLE_TOP_LEFT, second), RED_CIRCLE_TOP_LEFT.caption)
    assert result["count"] == 0.0
    assert result["correct"] == 0.0


def test_relative_positions_and_counts_follow_genevals_metadata() -> None:
    from trainer.rewards.geneval_checks import check_image

    circle = ShapeScene("small", "red", "circle", 1, 0, "white")
    square = ShapeScene("small", "blue", "square", 1, 2, "white")
    objects = [d.as_object() for d in detect_shapes(two_shapes(circle, square))[0]]
    square_right_of_circle = {
        "include": [{"class": "circle", "count": 1, "color": "red"}, {"class": "square", "count": 1, "color": "blue",
                                                                       "position": ["right of", 0]}],
    }  # fmt: skip
    assert check_image(square_right_of_circle, objects).correct
    square_right_of_circle["include"][1]["position"] = ["left of", 0]
    assert not check_image(square_right_of_circle, objects).correct
    two_circles = {"include": [{"class": "circle", "count": 2}], "exclude": [{"class": "circle", "count": 3}]}
    assert not check_image(two_circles, objects).correct
    both = [d.as_object() for d in detect_shapes(two_shapes(circle, ShapeScene("small", "red", "circle", 0, 2, "")))[0]]
    assert check_image(two_circles, both).correct


def test_a_prompt_without_metadata_scores_zero() -> None:
    assert scored(render(RED_CIRCLE_TOP_LEFT), "a red apple")["score"] == 0.0


def test_a_training_reward_logs_each_checks_sub_score() -> None:
    reward = WeightedReward([RewardSpec(name="geneval")], torch.device("cpu"))
    _, parts = reward(render(RED_CIRCLE_TOP_LEFT).unsqueeze(0), [RED_CIRCLE_TOP_LEFT.caption])
    assert set(parts) == {"geneval", *(f"geneval/{c}" for c in ("presence", "count", "color", "position", "correct"))}


def test_builtin_shapes_geneval_is_the_shapes_training_captions_each_with_its_metadata() -> None:
    spec = JobSpec.model_validate(
        {
            "model": {"path": "builtin:shapes"},
            "reward": [{"name": "geneval"}],
            "prompts": {"source": "builtin:shapes-geneval"},
        }
    )
    prompts = load_prompts(spec.prompts.source)
    assert prompts == load_prompts("builtin:shapes")
    assert [line["prompt"] for line in shapes_geneval_metadata()] == prompts
    assert metadata_by_caption()[prompts[0]]["include"][0]["position"] == ["top left", "grid"]


def test_the_shape_detector_takes_no_detector_options_naming_the_field() -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "geneval", "score_threshold": 0.5}]))
    assert [problem["field"] for problem in spec_errors(error.value)] == ["reward.0.score_threshold"]
