"""Qwen-Image-Edit (``model.family: qwen_image_edit``): each row's image read by the text encoder and VAE-encoded as
QwenImageEditPipeline does, its tokens beside the noisy ones in the pipeline's own transformer call, its true CFG,
Qwen-Image's σ grid as the pipeline sets it, training on an edit set, bf16, the meta device, the LoRA export, and the
refusals (text prompts; the algorithms upstream does not train on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from tests.executors.conftest import audit_spec
from tests.executors.test_meta_device_step import OneDevicePerOp, meta_job
from tests.trainer.conftest import EDIT_ROWS, read_metrics, write_spec
from tests.trainer.test_exports import relative, trained
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid
from trainer.edit_prompt import EditPrompt, negative_prompt
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.layout import step_batch
from trainer.models.flux import pack, unpack
from trainer.models.loading import load_family
from trainer.models.qwen_image_edit import EDIT_TEMPLATE_TOKENS, PLUS_PIPELINE, QwenImageEditFamily
from trainer.models.tiny_qwen_image_edit import EDIT_PROMPT_TEMPLATE, TINY_SIZE, build_tiny_qwen_image_edit
from trainer.prompts import load_prompts
from trainer.run import run
from trainer.spec import ModelSpec, SpecError, parse_spec, spec_errors

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def family(qwen_edit_dir: Path) -> QwenImageEditFamily:
    return QwenImageEditFamily(qwen_edit_dir, CPU, torch.float32, TINY_SIZE)


@pytest.fixture(scope="module")
def rows(edit_set_dir: Path) -> list[EditPrompt]:
    """The edit set's first two rows: one instruction, two images."""
    return [EditPrompt(prompt, edit_set_dir / image) for prompt, image, _ in EDIT_ROWS[:2]]


def pipeline(family: QwenImageEditFamily) -> Any:
    import diffusers

    return diffusers.QwenImageEditPipeline(
        scheduler=family.schedule.scheduler(), vae=family.vae, text_encoder=family.text_encoder,
        tokenizer=family.tokenizer, processor=family.processor, transformer=family.transformer,
    )  # fmt: skip


def pipeline_inputs(
    family: QwenImageEditFamily, row: EditPrompt, x: torch.Tensor, text: str | None = None
) -> tuple[torch.Tensor, ...]:
    """What QwenImageEditPipeline.__call__ hands its transformer for this row at the job's size: the prompt
    embeddings of ``encode_prompt`` (of ``text``, else the row's instruction) on the resized image, the packed noise
    and the packed image latents of ``prepare_latents``."""
    from PIL import Image

    pipe = pipeline(family)
    height, width = TINY_SIZE
    image = pipe.image_processor.resize(Image.open(row.image).convert("RGB"), height, width)
    embeds, _ = pipe.encode_prompt([str(row) if text is None else text], image=image, device=CPU)
    pixels = pipe.image_processor.preprocess(image, height, width).unsqueeze(2)
    noisy, image_latents = pipe.prepare_latents(pixels, 1, 16, height, width, torch.float32, CPU, None, pack(x))
    return embeds, noisy, image_latents


def test_the_tiny_tokenizer_reads_the_edit_template_into_the_64_tokens_the_pipeline_drops(
    family: QwenImageEditFamily, rows: list[EditPrompt]
) -> None:
    from PIL import Image

    inputs = family.processor(
        text=[EDIT_PROMPT_TEMPLATE.format(rows[0])], images=[Image.open(rows[0].image)], return_tensors="pt"
    )
    tokens = family.tokenizer.convert_ids_to_tokens(inputs.input_ids[0])
    assert tokens[EDIT_TEMPLATE_TOKENS - 3 : EDIT_TEMPLATE_TOKENS + 1] == [
        "<|im_start|>",
        "user",
        "\n",
        "<|vision_start|>",
    ]
    assert (
        tokens.count("<|image_pad|>") == 4
    )  # a 32 px image: the processor's 56 px minimum, 4 × 4 patches merged 2 × 2


def test_an_edit_row_is_encoded_with_its_image_as_qwen_image_edit_pipeline_encodes_it(
    family: QwenImageEditFamily, rows: list[EditPrompt]
) -> None:
    ours = family.encode_prompts(rows)
    x = torch.zeros(1, *family.latent_shape)
    for row, (embeds, _, image_latents) in enumerate(pipeline_inputs(family, r, x) for r in rows):
        assert torch.equal(ours.hidden[row : row + 1], embeds) and bool(ours.mask[row].all())  # type: ignore[index]
        assert torch.allclose(pack(ours.image[row : row + 1]), image_latents, atol=1e-6)  # type: ignore[index]
    assert not torch.equal(ours.hidden[0], ours.hidden[1])  # one instruction: the text encoder read each image


def pipeline_velocity(
    family: QwenImageEditFamily, embeds: torch.Tensor, noisy: torch.Tensor, image_latents: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    """QwenImageEditPipeline.__call__'s transformer call at timestep t (its t / 1000 = σ): the noisy and the image
    tokens, both grids, the output cropped to the noisy tokens (packed)."""
    height, width = family.latent_shape[1:]
    return family.transformer(
        hidden_states=torch.cat([noisy, image_latents], dim=1), timestep=t / 1000, encoder_hidden_states=embeds,
        encoder_hidden_states_mask=None, img_shapes=[[(1, height // 2, width // 2), (1, height // 2, width // 2)]],
        return_dict=False,
    )[0][:, : noisy.shape[1]]  # fmt: skip


def test_the_velocity_is_the_pipelines_transformer_call_on_the_noisy_and_image_tokens(
    family: QwenImageEditFamily, rows: list[EditPrompt]
) -> None:
    """Both rows batched; each row's velocity is the pipeline's call on its own inputs."""
    x = torch.randn(2, *family.latent_shape, generator=torch.Generator().manual_seed(0))
    sigma = torch.tensor([0.7, 0.4])
    with torch.no_grad():
        ours = family.velocity(family.transformer, x, sigma, family.encode_prompts(rows), None, 1.0)
        for row in range(2):
            embeds, noisy, image_latents = pipeline_inputs(family, rows[row], x[row : row + 1])
            theirs = pipeline_velocity(family, embeds, noisy, image_latents, sigma[row : row + 1] * 1000)
            assert torch.allclose(ours[row : row + 1], unpack(theirs, *family.latent_shape), atol=1e-6)


def test_true_cfg_is_the_pipelines_with_the_empty_negative_prompt_read_with_the_rows_image(
    family: QwenImageEditFamily, rows: list[EditPrompt]
) -> None:
    """The pipeline's loop with a negative prompt: its two calls (the negative one on the same image), the guided
    velocity rescaled to the conditional one's norm per packed patch. Here the two run batched, the shorter
    negative embeddings padded and masked."""
    scale, t = 4.0, torch.tensor([600.0])
    x = torch.randn(1, *family.latent_shape, generator=torch.Generator().manual_seed(1))
    cond, uncond = family.encode_prompts(rows[:1]), family.encode_prompts([negative_prompt(rows[0])])
    with torch.no_grad():
        ours = family.velocity(family.transformer, x, t / 1000, cond, uncond, scale)
        embeds, noisy, image_latents = pipeline_inputs(family, rows[0], x)
        negative, _, _ = pipeline_inputs(family, rows[0], x, "")
        noise_pred = pipeline_velocity(family, embeds, noisy, image_latents, t)
        neg_noise_pred = pipeline_velocity(family, negative, noisy, image_latents, t)
    comb_pred = neg_noise_pred + scale * (noise_pred - neg_noise_pred)
    theirs = comb_pred * (torch.norm(noise_pred, dim=-1, keepdim=True) / torch.norm(comb_pred, dim=-1, keepdim=True))
    assert uncond.hidden.shape[1] < cond.hidden.shape[1]  # the batch pads the negative prompt
    assert torch.allclose(ours, unpack(theirs, *family.latent_shape), atol=1e-5)


def test_the_qwen_image_edit_grid_is_the_one_its_pipeline_sets(family: QwenImageEditFamily) -> None:
    """QwenImageEditPipeline.__call__'s set_timesteps: its linspace, μ of its noisy latents' tokens (the image's
    tokens not counted), on its scheduler. (The call itself VAE-encodes a 1024 × 1024 px condition image whatever
    the output size: seconds of a CPU.)"""
    from diffusers.pipelines.qwenimage import pipeline_qwenimage_edit as edit

    steps = 6
    pipe = pipeline(family)
    height, width = TINY_SIZE
    latents, _ = pipe.prepare_latents(None, 1, 16, height, width, torch.float32, CPU, torch.Generator())
    config = pipe.scheduler.config
    mu = edit.calculate_shift(
        latents.shape[1], config.base_image_seq_len, config.max_image_seq_len, config.base_shift, config.max_shift
    )
    edit.retrieve_timesteps(pipe.scheduler, steps, CPU, sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)
    assert_same_grid(family.sigmas(steps), pipe.scheduler.sigmas)
    assert abs(family.sigmas(steps)[-2] - 0.02) < 1e-6  # Qwen-Image's shift_terminal, then 0


def test_a_text_prompt_without_an_image_is_refused_naming_the_prompt_source(family: QwenImageEditFamily) -> None:
    with pytest.raises(SpecError) as error:
        family.encode_prompts(["make the ball red"])
    assert error.value.field == "prompts.source" and "'make the ball red'" in str(error.value)


def test_qwen_image_edit_on_text_prompts_is_refused_naming_the_prompt_source(qwen_edit_dir: Path) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "qwen_image_edit", "path": str(qwen_edit_dir)}})
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "prompts.source" and "'qwen_image_edit'" in problem["message"]


@pytest.mark.parametrize("algorithm", ["awm", "dgpo"])
def test_an_algorithm_upstream_does_not_train_on_qwen_image_edit_is_refused_naming_both(
    algorithm: str, qwen_edit_dir: Path, edit_set_dir: Path
) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(
            {
                "model": {"family": "qwen_image_edit", "path": str(qwen_edit_dir)},
                "prompts": {"source": str(edit_set_dir)},
                "algorithm": {"name": algorithm},
            }
        )
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "algorithm.name"
    assert "'qwen_image_edit'" in problem["message"] and f"'{algorithm}'" in problem["message"]


def test_qwen_image_edit_trains_two_flow_grpo_steps_on_an_edit_set_with_true_cfg(
    tmp_path: Path, qwen_edit_dir: Path, edit_set_dir: Path
) -> None:
    model = {"family": "qwen_image_edit", "path": str(qwen_edit_dir), "resolution": list(TINY_SIZE)}
    spec = algorithm_spec("flow_grpo", model, steps=2)
    spec["algorithm"]["cfg_scale"] = 4.0
    spec["prompts"] = {"source": str(edit_set_dir)}
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)


def test_in_bf16_the_timesteps_reach_the_transformer_in_fp32_beside_the_image_tokens(
    qwen_edit_dir: Path, rows: list[EditPrompt]
) -> None:
    """The VAE encodes the rows' images in bf16; they travel in fp32 with the embeddings and meet the transformer in
    its compute precision, the timestep unrounded."""
    spec = ModelSpec(family="qwen_image_edit", path=str(qwen_edit_dir), resolution=TINY_SIZE, precision="bf16")
    family = load_family(spec, CPU)
    seen: list[dict[str, Any]] = []
    family.transformer.register_forward_pre_hook(lambda _m, _a, kwargs: seen.append(kwargs), with_kwargs=True)
    cond = family.encode_prompts(rows)
    sigma = family.sigmas(10)[1:3].float()
    velocity = family.velocity(family.transformer, torch.randn(2, *family.latent_shape), sigma, cond, None, 1.0)
    assert family.vae.dtype == torch.bfloat16 and cond.image.dtype == torch.float32  # type: ignore[union-attr]
    assert seen[0]["timestep"].dtype == torch.float32 and torch.equal(seen[0]["timestep"], sigma)
    assert seen[0]["hidden_states"].shape[1] == 2 * family.image_tokens  # noisy tokens, then the image's
    assert velocity.dtype == torch.float32 and bool(velocity.isfinite().all())


def test_a_native_edit_step_on_the_meta_device_mixes_no_devices(
    sfumato_home: Path, qwen_edit_dir: Path, edit_set_dir: Path
) -> None:
    """The rows' images VAE-encoded on the job's device, and every tensor of the step there. The text encoder is
    loaded on the host, where ``model.text_encoders: cpu`` leaves it: its vision tower reads each image's patch grid
    as host numbers (transformers' Qwen2.5-VL, ``grid_thw.tolist()``), which a meta tensor cannot answer."""
    from transformers import Qwen2_5_VLForConditionalGeneration

    model = {"family": "qwen_image_edit", "path": str(qwen_edit_dir), "resolution": list(TINY_SIZE)}
    spec = parse_spec(audit_spec(model=model, prompts={"source": str(edit_set_dir)}))
    job = meta_job(spec, EXECUTOR_CLASSES["native"].layout)
    job.prompts = load_prompts(str(edit_set_dir))
    family: Any = job.family
    family.text_encoder = Qwen2_5_VLForConditionalGeneration.from_pretrained(qwen_edit_dir / "text_encoder")
    family.encoder_device = CPU
    algo = spec.algorithm
    batch = step_batch(job.prompts, 1, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
    with OneDevicePerOp() as check:
        metrics = make_executor(spec.executor, job).train_step(batch).metrics
    assert check.mixed == []
    assert metrics.keys() >= {"loss", "grad_norm"}


def test_a_qwen_image_edit_lora_export_loads_into_its_pipeline_with_the_trained_velocity(
    tmp_path: Path, qwen_edit_dir: Path, edit_set_dir: Path, rows: list[EditPrompt]
) -> None:
    import diffusers

    from trainer.export.write import export

    model = {"family": "qwen_image_edit", "path": str(qwen_edit_dir), "resolution": list(TINY_SIZE)}
    spec = parse_spec({"model": model | {"lora_rank": 4, "lora_alpha": 6.0}, "prompts": {"source": str(edit_set_dir)}})
    family, checkpoint = trained(spec, tmp_path)
    base = diffusers.QwenImageTransformer2DModel.from_pretrained(qwen_edit_dir / "transformer")
    pipe = pipeline(family)
    pipe.transformer = base
    pipe.load_lora_weights(export(spec, checkpoint, "diffusers", tmp_path / "diffusers"))
    cond, x = family.encode_prompts(rows), torch.randn(2, *family.latent_shape)
    with torch.no_grad():
        theirs = family.forward(pipe.transformer, x, torch.tensor([0.7, 0.3]), cond)
        ours = family.forward(family.transformer, x, torch.tensor([0.7, 0.3]), cond)
    assert relative(theirs, ours) < 1e-5


@pytest.fixture(scope="module")
def plus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model as a QwenImageEditPlusPipeline folder (Qwen-Image-Edit-2509/2511)."""
    return build_tiny_qwen_image_edit(tmp_path_factory.mktemp("qwen-edit-plus") / "model", PLUS_PIPELINE)


def test_a_plus_row_is_encoded_as_qwen_image_edit_plus_pipeline_encodes_it(
    plus_dir: Path, rows: list[EditPrompt]
) -> None:
    """The Plus template announces the image as "Picture 1: " in the user's text, and its text encoder sees the
    image at about 384 × 384 px (its aspect kept), the VAE at the job's size."""
    import diffusers
    from diffusers.pipelines.qwenimage.pipeline_qwenimage_edit_plus import CONDITION_IMAGE_SIZE, calculate_dimensions
    from PIL import Image

    family = QwenImageEditFamily(plus_dir, CPU, torch.float32, TINY_SIZE)
    pipe = diffusers.QwenImageEditPlusPipeline(
        scheduler=family.schedule.scheduler(), vae=family.vae, text_encoder=family.text_encoder,
        tokenizer=family.tokenizer, processor=family.processor, transformer=family.transformer,
    )  # fmt: skip
    ours = family.encode_prompts(rows)
    for row in range(2):
        image = Image.open(rows[row].image).convert("RGB")
        width, height = calculate_dimensions(CONDITION_IMAGE_SIZE, image.width / image.height)
        seen = pipe.image_processor.resize(image, height, width)
        theirs, _ = pipe.encode_prompt([str(rows[row])], image=[seen], device=CPU)
        assert torch.equal(ours.hidden[row : row + 1], theirs) and (height, width) == (384, 384)


def test_a_plus_folder_is_a_qwen_image_edit_checkpoint(plus_dir: Path) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "qwen_image", "path": str(plus_dir)}})
    assert "QwenImageEditPlusPipeline (qwen_image_edit)" in str(error.value)


def test_diffusion_nft_the_forward_process_algorithm_upstream_trains_on_it_takes_a_step_on_an_edit_set(
    tmp_path: Path, qwen_edit_dir: Path, edit_set_dir: Path
) -> None:
    """Its clean samples re-noised and scored with each row's image beside them."""
    model = {"family": "qwen_image_edit", "path": str(qwen_edit_dir), "resolution": list(TINY_SIZE)}
    spec = algorithm_spec("diffusion_nft", model, steps=1)
    spec["prompts"] = {"source": str(edit_set_dir)}
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["grad_norm"] > 0
