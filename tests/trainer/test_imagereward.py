"""ImageReward on a tiny random-weight BLIP saved here: the MLP head on the text encoder's first token, reading the
prompt with cross-attention to the image, standardised by ImageReward's mean and deviation."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from trainer.rewards.aesthetic import aesthetic_head
from trainer.rewards.imagereward import REWARD_MEAN, REWARD_STD
from trainer.rewards.registry import WeightedReward
from trainer.spec import RewardSpec, SpecError, parse_spec, spec_errors

WORDS = ["a", "red", "blue", "apple", "car"]
PROMPTS = ["a red apple", "a blue car", "a red car"]
SIZE = 32


def save_tiny_imagereward(directory: Path) -> Path:
    from safetensors.torch import save_file
    from transformers import BertTokenizer, BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor

    torch.manual_seed(0)
    vocab = directory / "vocab.txt"
    directory.mkdir(parents=True, exist_ok=True)
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = BertTokenizer(str(vocab))
    layers = {"intermediate_size": 37, "num_hidden_layers": 1, "num_attention_heads": 2}
    vision = {**layers, "hidden_size": 24, "image_size": SIZE, "patch_size": 8}
    text = {**layers, "vocab_size": len(tokenizer), "hidden_size": 32, "max_position_embeddings": 40}
    text["encoder_hidden_size"] = vision["hidden_size"]
    BlipForImageTextRetrieval(BlipConfig(text_config=text, vision_config=vision)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    BlipImageProcessor(size={"height": SIZE, "width": SIZE}).save_pretrained(directory)
    head = aesthetic_head(32)
    for layer in head:
        if isinstance(layer, torch.nn.Linear):  # scale-preserving, so that the score varies by more than rounding
            torch.nn.init.normal_(layer.weight, std=layer.in_features**-0.5)
    save_file(
        {f"mlp.layers.{k}": v.contiguous() for k, v in head.state_dict().items()},
        str(directory / "imagereward_mlp.safetensors"),
    )
    return directory


@pytest.fixture(scope="module")
def blip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_imagereward(tmp_path_factory.mktemp("imagereward"))


def images() -> torch.Tensor:
    return torch.rand(3, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))


def reference(directory: Path) -> torch.Tensor:
    """ImageReward.score's steps, written out on the transformers model: tokens padded to 35, the vision model's
    patch states as the text encoder's cross-attention input, the MLP on the first token, standardised."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BlipForImageTextRetrieval

    model = BlipForImageTextRetrieval.from_pretrained(directory).eval()
    tokens = AutoTokenizer.from_pretrained(directory)(PROMPTS, padding="max_length", max_length=35, return_tensors="pt")
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(1, 3, 1, 1)
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(1, 3, 1, 1)
    head = aesthetic_head(32)
    head.load_state_dict(
        {k.removeprefix("mlp.layers."): v for k, v in load_file(str(directory / "imagereward_mlp.safetensors")).items()}
    )
    with torch.no_grad():
        states = model.vision_model(pixel_values=(images() - mean) / std).last_hidden_state
        text = model.text_encoder(input_ids=tokens.input_ids, attention_mask=tokens.attention_mask,
                                  encoder_hidden_states=states).last_hidden_state  # fmt: skip
        return ((head.eval()(text[:, 0]) - REWARD_MEAN) / REWARD_STD).squeeze(1)


def test_imagereward_is_the_mlp_on_the_image_grounded_first_token_standardised(blip_dir: Path) -> None:
    reward = WeightedReward([RewardSpec(name="imagereward", path=str(blip_dir))], torch.device("cpu"))
    total, parts = reward(images(), PROMPTS)
    assert set(parts) == {"imagereward"}
    torch.testing.assert_close(total, reference(blip_dir), rtol=1e-4, atol=1e-5)
    assert total.std() > 1e-3  # the prompts and images are told apart


def test_a_directory_without_the_head_is_a_spec_error_naming_the_path(blip_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "blip").mkdir()
    for file in blip_dir.iterdir():
        if file.name != "imagereward_mlp.safetensors":
            (tmp_path / "blip" / file.name).write_bytes(file.read_bytes())
    with pytest.raises(SpecError) as caught:
        WeightedReward([RewardSpec(name="imagereward", path=str(tmp_path / "blip"))], torch.device("cpu"))
    assert caught.value.field == "reward.path"


def test_imagereward_without_a_path_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "imagereward"}]))
    assert "reward.0.path" in [problem["field"] for problem in spec_errors(error.value)]
