"""The ocr reward reads rendered text with Tesseract and scores it as flow_grpo's OcrScorer does:
1 − edit distance / len(target) on spaces-removed lower-case text, the distance capped at the target's length."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw, ImageFont
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from trainer.prompts import load_prompts
from trainer.rewards.ocr import edit_distance, make_ocr, quoted_target
from trainer.rewards.registry import WeightedReward
from trainer.spec import JobSpec, RewardSpec, parse_spec, spec_errors


def rendered(text: str) -> torch.Tensor:
    """Black text on white, [3, 64, 256] in [0, 1], in Pillow's bundled TrueType font (no system font needed)."""
    image = Image.new("RGB", (256, 64), "white")
    ImageDraw.Draw(image).text((8, 14), text, fill="black", font=ImageFont.load_default(size=28))
    return torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 255


@pytest.fixture(scope="module")
def ocr():  # type: ignore[no-untyped-def]
    return make_ocr(torch.device("cpu"))


def test_edit_distance_counts_insertions_deletions_and_substitutions() -> None:
    assert edit_distance("kitten", "sitting") == 3  # k→s, e→i, +g
    assert edit_distance("", "abc") == 3
    assert edit_distance("flaw", "lawn") == 2  # -f, +n


def test_the_target_is_the_text_between_the_first_two_double_quotes() -> None:
    assert quoted_target('a sign that says "Open Late" and "more"') == "Open Late"
    assert quoted_target("a sign with no quoted text") is None


def test_scores_are_one_minus_the_normalised_edit_distance_to_the_quoted_text(ocr) -> None:  # type: ignore[no-untyped-def]
    images = torch.stack([rendered(t) for t in ("Hello World", "Hallo World", "SFUMATO", "HELLO", "xyz qrs tuv")])
    prompts = ['a sign "Hello World"', 'a sign "Hello World"', 'a logo "sfumato"', 'a sign "Hello World"', 'a "cat"']
    scores, subs = ocr(images, prompts)
    # helloworld read whole: 0; hallo/hello: 1 substitution of 10; case ignored: 0; hello vs helloworld: 5 of 10;
    # xyzqrstuv vs cat: 9, capped at len("cat") = 3.
    assert scores.tolist() == pytest.approx([1.0, 0.9, 1.0, 0.5, 0.0])
    assert subs["exact"].tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]


def test_text_inside_more_text_counts_as_found(ocr) -> None:  # type: ignore[no-untyped-def]
    scores, _ = ocr(rendered("Open Late Today").unsqueeze(0), ['a shop sign that says "open late"'])
    assert scores.tolist() == [1.0]


def test_a_prompt_that_quotes_nothing_scores_zero(ocr) -> None:  # type: ignore[no-untyped-def]
    scores, subs = ocr(rendered("Hello").unsqueeze(0), ["a sign that says Hello"])
    assert scores.tolist() == [0.0]
    assert subs["exact"].tolist() == [0.0]


def test_a_training_reward_logs_the_exact_sub_score() -> None:
    reward = WeightedReward([RewardSpec(name="ocr")], torch.device("cpu"))
    total, parts = reward(rendered("Hello World").unsqueeze(0), ['a sign "Hello World"'])
    assert set(parts) == {"ocr", "ocr/exact"}
    assert total.tolist() == [1.0]


def test_a_spec_trains_and_evaluates_with_ocr_on_the_builtin_ocr_prompts() -> None:
    spec = JobSpec.model_validate({"reward": [{"name": "ocr"}], "prompts": {"source": "builtin:ocr"}})
    prompts = load_prompts(spec.prompts.source)
    assert len(prompts) == 12
    assert all(quoted_target(prompt) for prompt in prompts)


def test_ocr_with_a_path_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "ocr", "path": "/tmp"}]))
    assert "reward.0.path" in [problem["field"] for problem in spec_errors(error.value)]
