"""Wan 2.1 image-to-video (``model.family: wan_i2v``): each row's image encoded as WanImageToVideoPipeline encodes
it (CLIP tokens, masked condition latents), the velocity its transformer call, its σ grid, Flow-Factory's LoRA
targets, the Wan 2.2 image-to-video folders refused, and two Flow-GRPO steps through the trainer's entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from PIL import Image
from pydantic import ValidationError

from tests.trainer.conftest import EDIT_ROWS, read_metrics, write_spec
from tests.trainer.test_exports import relative, trained
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid
from trainer.edit_prompt import EditPrompt
from trainer.models.base import Conditioning
from trainer.models.tiny_wan_i2v import TINY_SIZE
from trainer.models.wan import WAN22_LORA_TARGETS
from trainer.models.wan_i2v import WanI2VFamily
from trainer.run import run
from trainer.spec import SpecError, parse_spec, spec_errors

STEPS = 3


@pytest.fixture(scope="module")
def family(wan_i2v_dir: Path) -> WanI2VFamily:
    return WanI2VFamily(wan_i2v_dir, torch.device("cpu"), torch.float32, TINY_SIZE)


def row(edit_set_dir: Path, index: int = 0, text: str | None = None) -> EditPrompt:
    """The edit set's row ``index`` (EDIT_ROWS), its instruction replaced by ``text`` when given."""
    prompt, image, _ = EDIT_ROWS[index]
    return EditPrompt(prompt if text is None else text, edit_set_dir / image)


def pipeline_calls(family: WanI2VFamily, wan_i2v_dir: Path, prompt: EditPrompt, latents: torch.Tensor) -> list[Any]:
    """The transformer calls (keyword inputs, output) of WanImageToVideoPipeline, loaded from the folder with
    the family's modules, sampling ``prompt`` from ``latents`` without guidance."""
    import diffusers

    pipe = diffusers.WanImageToVideoPipeline.from_pretrained(
        wan_i2v_dir, transformer=family.transformer, vae=family.vae, image_encoder=family.image_encoder,
        text_encoder=None, tokenizer=None,
    )  # fmt: skip
    calls: list[Any] = []
    hook = family.transformer.register_forward_hook(
        lambda _m, _a, kwargs, out: calls.append((kwargs, out[0])), with_kwargs=True
    )
    height, width, frames = TINY_SIZE
    with torch.no_grad():
        pipe(image=Image.open(prompt.image).convert("RGB"), prompt_embeds=family.encode_prompts([prompt]).hidden,
             height=height, width=width, num_frames=frames, num_inference_steps=STEPS, guidance_scale=1.0,
             latents=latents.clone(), output_type="latent")  # fmt: skip
    hook.remove()
    pipe.scheduler.set_timesteps(STEPS)
    calls.append(pipe.scheduler.sigmas)
    return calls


@pytest.fixture(scope="module")
def calls(family: WanI2VFamily, wan_i2v_dir: Path, edit_set_dir: Path) -> list[Any]:
    latents = torch.randn(1, *family.latent_shape, generator=torch.Generator().manual_seed(1))
    return pipeline_calls(family, wan_i2v_dir, row(edit_set_dir), latents)


def test_a_video_is_the_vaes_latent_channels_the_mask_and_condition_only_enter_the_transformer(
    family: WanI2VFamily,
) -> None:
    assert family.latent_shape == (4, 2, 4, 4) and family.transformer.config.in_channels == 4 + 4 + 4
    assert family.decode(torch.randn(2, *family.latent_shape)).shape == (2, 5, 3, 32, 32)


def test_the_image_is_encoded_as_the_pipeline_encodes_it_clip_tokens_and_masked_condition_latents(
    family: WanI2VFamily, edit_set_dir: Path, calls: list[Any]
) -> None:
    cond = family.encode_prompts([row(edit_set_dir)])
    inputs, _ = calls[0]
    assert torch.equal(cond.image_tokens, inputs["encoder_hidden_states_image"])  # type: ignore[arg-type]
    assert torch.equal(cond.image, inputs["hidden_states"][:, 4:])  # type: ignore[arg-type]
    assert cond.hidden.shape[1] == 512 and torch.equal(cond.hidden, inputs["encoder_hidden_states"])


def test_the_velocity_is_the_pipelines_transformer_call_at_t_1000_sigma(
    family: WanI2VFamily, edit_set_dir: Path, calls: list[Any]
) -> None:
    """Every step's call: the pipeline's inputs with the trainer's unrounded t = 1000σ (its UniPC rounds t)."""
    cond = family.encode_prompts([row(edit_set_dir)])
    sigmas = calls[-1]
    for step, (inputs, _) in enumerate(calls[:-1]):
        sigma = sigmas[step : step + 1].float()
        with torch.no_grad():
            ours = family.forward(family.transformer, inputs["hidden_states"][:, :4], sigma, cond)
            theirs = family.transformer(**{**inputs, "timestep": sigma * 1000})[0]
        assert torch.equal(ours, theirs)


def test_the_grid_is_the_one_wan_image_to_video_pipeline_sets(family: WanI2VFamily, calls: list[Any]) -> None:
    assert_same_grid(family.sigmas(STEPS), calls[-1])
    assert family.schedule.config["flow_shift"] == 3.0


def test_each_row_carries_its_own_image_and_the_unconditional_row_the_same_image(
    family: WanI2VFamily, edit_set_dir: Path
) -> None:
    rows = [row(edit_set_dir, 0), row(edit_set_dir, 1), row(edit_set_dir, 0, text="")]
    cond = family.encode_prompts(rows)
    assert not torch.equal(cond.image[0], cond.image[1])  # type: ignore[index]
    assert torch.equal(cond.image[0], cond.image[2]) and torch.equal(cond.image_tokens[0], cond.image_tokens[2])  # type: ignore[index]


def test_the_clip_tokens_travel_with_their_row_through_cat_and_index(family: WanI2VFamily, edit_set_dir: Path) -> None:
    first, second = (family.encode_prompts([row(edit_set_dir, index)]) for index in (0, 1))
    moved = Conditioning.cat([first, second]).index([1, 0]).pinned()
    assert torch.equal(moved.image_tokens, torch.cat([second.image_tokens, first.image_tokens]))  # type: ignore[arg-type]
    assert torch.equal(moved.image, torch.cat([second.image, first.image]))  # type: ignore[arg-type]


def test_model_text_encoders_free_drops_the_clip_image_encoder_with_the_text_encoder(wan_i2v_dir: Path) -> None:
    family = WanI2VFamily(wan_i2v_dir, torch.device("cpu"), torch.float32, TINY_SIZE)
    family.place_text_encoders("free")
    assert family.image_encoder is None and family.text_encoder is None


def test_a_text_prompt_without_an_image_is_refused_naming_prompts_source(family: WanI2VFamily) -> None:
    with pytest.raises(SpecError) as error:
        family.encode_prompts(["a red ball"])
    assert error.value.field == "prompts.source" and "wan_i2v" in error.value.message


def test_a_lora_wraps_flow_factorys_wan_i2v_targets(wan_i2v_dir: Path) -> None:
    from trainer.models.loading import load_family
    from trainer.spec import ModelSpec

    model = ModelSpec(family="wan_i2v", path=str(wan_i2v_dir), resolution=TINY_SIZE[:2], num_frames=TINY_SIZE[2])
    family = load_family(model, torch.device("cpu"))
    assert family.lora_targets == WAN22_LORA_TARGETS
    wrapped = {n for n, m in family.transformer.named_modules() if hasattr(m, "lora_A")}
    assert "base_model.model.blocks.0.attn2.add_k_proj" not in wrapped
    assert {"base_model.model.blocks.0.ffn.net.2", "base_model.model.blocks.0.attn2.to_q"} <= wrapped


def test_wan22_ti2v_5b_as_image_to_video_is_refused_naming_model_path(tmp_path: Path) -> None:
    (tmp_path / "model_index.json").write_text(json.dumps({"_class_name": "WanImageToVideoPipeline",
                                                           "expand_timesteps": True}))  # fmt: skip
    with pytest.raises(SpecError) as error:
        WanI2VFamily(tmp_path, torch.device("cpu"), torch.float32, TINY_SIZE)
    assert error.value.field == "model.path" and "expand_timesteps" in error.value.message


def test_a_wan_folder_without_the_clip_image_encoder_is_refused_naming_model_path(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as error:
        WanI2VFamily(tmp_path, torch.device("cpu"), torch.float32, TINY_SIZE)
    assert error.value.field == "model.path" and "image_encoder" in error.value.message


def model_section(wan_i2v_dir: Path) -> dict[str, Any]:
    height, width, frames = TINY_SIZE
    return {"family": "wan_i2v", "path": str(wan_i2v_dir), "resolution": [height, width], "num_frames": frames}


def refusals(spec: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as error:
        parse_spec(spec)
    return {problem["field"]: problem["message"] for problem in spec_errors(error.value)}


@pytest.mark.parametrize("algorithm", ["awm", "dgpo"])
def test_an_algorithm_upstream_does_not_train_on_wan_i2v_is_refused_naming_both(
    wan_i2v_dir: Path, edit_set_dir: Path, algorithm: str
) -> None:
    spec = algorithm_spec(algorithm, model_section(wan_i2v_dir), steps=1)
    spec["prompts"] = {**spec["prompts"], "source": str(edit_set_dir)}
    message = refusals(spec)["algorithm.name"]
    assert "'wan_i2v'" in message and f"'{algorithm}'" in message


def test_a_text_prompt_file_for_wan_i2v_is_refused_naming_prompts_source(wan_i2v_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "prompts.txt").write_text("a red ball\n")
    spec = algorithm_spec("flow_grpo", model_section(wan_i2v_dir), steps=1)
    spec["prompts"] = {**spec["prompts"], "source": str(tmp_path / "prompts.txt")}
    assert "wan_i2v" in refusals(spec)["prompts.source"]


@pytest.mark.parametrize("algorithm", ["flow_grpo", "diffusion_nft"])
def test_each_upstream_algorithm_trains_two_steps_on_wan_i2v_under_cfg(
    tmp_path: Path, wan_i2v_dir: Path, edit_set_dir: Path, algorithm: str
) -> None:
    """Flow-Factory's two Wan 2.1 I2V recipes' trainers: its GRPO (here flow_grpo) and DiffusionNFT."""
    spec = algorithm_spec(algorithm, model_section(wan_i2v_dir), steps=2)
    spec["prompts"] = {**spec["prompts"], "source": str(edit_set_dir)}
    spec["algorithm"]["cfg_scale"] = 5.0  # the pipeline's guidance: the empty prompt with the row's image
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)


def test_a_wan_i2v_lora_export_loads_into_wan_image_to_video_pipeline_with_the_trained_velocity(
    tmp_path: Path, wan_i2v_dir: Path, edit_set_dir: Path
) -> None:
    import diffusers

    from trainer.export.write import export

    spec = algorithm_spec("flow_grpo", {**model_section(wan_i2v_dir), "lora_rank": 4, "lora_alpha": 6.0}, steps=1)
    spec["prompts"] = {**spec["prompts"], "source": str(edit_set_dir)}
    job = parse_spec(spec)
    family, checkpoint = trained(job, tmp_path)
    pipe = diffusers.WanImageToVideoPipeline.from_pretrained(wan_i2v_dir)
    pipe.load_lora_weights(export(job, checkpoint, "diffusers", tmp_path / "diffusers"))
    cond, x = family.encode_prompts([row(edit_set_dir, 0), row(edit_set_dir, 1)]), torch.randn(2, *family.latent_shape)
    with torch.no_grad():
        theirs = family.forward(pipe.transformer, x, torch.tensor([0.7, 0.3]), cond)
        ours = family.forward(family.transformer, x, torch.tensor([0.7, 0.3]), cond)
    assert relative(theirs, ours) < 1e-5
