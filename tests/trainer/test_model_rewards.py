"""Model-based rewards load a CLIP directory and score with their reference formulas.

The CLIP models are tiny random-weight ones built and saved here; a word-level tokenizer and
a CLIP image processor stand in for the real ones and load through the same Auto classes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from trainer.models.word_tokenizer import word_tokenizer
from trainer.rewards.aesthetic import aesthetic_head
from trainer.rewards.registry import WeightedReward
from trainer.spec import RewardSpec, SpecError

WORDS = ["a", "red", "blue", "apple", "car"]
PROMPTS = ["a red apple", "a blue car", "a red car"]
SIZE = 32


def save_tiny_clip(directory: Path, dtype: torch.dtype = torch.float32) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    torch.manual_seed(0)
    tokenizer = word_tokenizer(WORDS, 16)
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "max_position_embeddings": 16,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
    }
    vision = {
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": SIZE,
        "patch_size": 8,
    }
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).to(dtype)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    crop = {"height": SIZE, "width": SIZE}
    CLIPImageProcessor(size={"shortest_edge": SIZE}, crop_size=crop).save_pretrained(directory)
    from safetensors.torch import save_file

    head = {f"layers.{key}": value.contiguous() for key, value in aesthetic_head(16).state_dict().items()}
    save_file(head, str(directory / "aesthetic_mlp.safetensors"))
    return directory


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_clip(tmp_path_factory.mktemp("clip"))


def images() -> torch.Tensor:
    """Pixel values on the uint8 grid, so the PIL path of the reference sees the same image."""
    return torch.randint(0, 256, (3, 3, SIZE, SIZE), generator=torch.Generator().manual_seed(1)).float() / 255


def reference_embeddings(directory: Path) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Normalised image and text embeddings through the transformers processor, one PIL image at a time."""
    from transformers import AutoTokenizer, CLIPImageProcessor, CLIPModel

    model = CLIPModel.from_pretrained(directory).eval()
    processor = CLIPImageProcessor.from_pretrained(directory)
    pil = [Image.fromarray((image * 255).round().byte().permute(1, 2, 0).numpy()) for image in images()]
    pixels = processor(images=pil, return_tensors="pt").pixel_values
    tokens = AutoTokenizer.from_pretrained(directory)(PROMPTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        image = model.visual_projection(model.vision_model(pixel_values=pixels).pooler_output)
        text = model.text_projection(model.text_model(**tokens).pooler_output)
        logit_scale = float(model.logit_scale.exp())
    norm = torch.nn.functional.normalize
    return norm(image, dim=-1), norm(text, dim=-1), logit_scale


def score(name: str, directory: Path) -> torch.Tensor:
    reward = WeightedReward([RewardSpec(name=name, path=str(directory))], torch.device("cpu"))
    total, parts = reward(images(), PROMPTS)
    assert torch.equal(total, parts[name]) and total.shape == (3,)
    return total


@pytest.mark.parametrize(("name", "scale"), [("clip_score", 30.0), ("pickscore", 26.0), ("hpsv2", None)])
def test_clip_rewards_follow_their_reference_formula(clip_dir: Path, name: str, scale: float | None) -> None:
    image, text, logit_scale = reference_embeddings(clip_dir)
    cosine = (image * text).sum(dim=-1)
    expected = cosine if scale is None else logit_scale * cosine / scale
    assert torch.allclose(score(name, clip_dir), expected, atol=1e-4)


def test_aesthetic_is_the_mlp_head_on_the_normalised_image_embedding(clip_dir: Path) -> None:
    image, _, _ = reference_embeddings(clip_dir)
    from safetensors.torch import load_file

    head = aesthetic_head(16).eval()
    saved = load_file(str(clip_dir / "aesthetic_mlp.safetensors"))
    head.load_state_dict({key.removeprefix("layers."): value for key, value in saved.items()})
    with torch.no_grad():
        expected = head(image).squeeze(1)
    assert torch.allclose(score("aesthetic", clip_dir), expected, atol=1e-4)


def test_a_batch_scores_each_row_as_alone(clip_dir: Path) -> None:
    reward = WeightedReward([RewardSpec(name="pickscore", path=str(clip_dir))], torch.device("cpu"))
    batch, _ = reward(images(), PROMPTS)
    alone = torch.cat([reward(images()[n : n + 1], PROMPTS[n : n + 1])[0] for n in range(3)])
    assert torch.allclose(batch, alone, atol=1e-5)


def test_a_bfloat16_model_scores_in_bfloat16_close_to_float32(clip_dir: Path, tmp_path: Path) -> None:
    bf16_dir = save_tiny_clip(tmp_path / "bf16", torch.bfloat16)
    from trainer.rewards.clip_embedding import ClipEmbedder

    assert ClipEmbedder(str(bf16_dir), torch.device("cpu")).dtype == torch.bfloat16
    half, full = score("hpsv2", bf16_dir), score("hpsv2", clip_dir)
    assert half.dtype == torch.float32 and torch.allclose(half, full, atol=0.05)


def test_a_reward_directory_that_does_not_load_is_a_spec_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as error:
        WeightedReward([RewardSpec(name="clip_score", path=str(tmp_path))], torch.device("cpu"))
    assert error.value.field == "reward.path"
