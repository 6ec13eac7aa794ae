"""Exports other tools load: diffusers' load_lora_weights, ComfyUI's LoRA key map, merged weights, and a
plain diffusers pipeline that draws the trainer's own eval images from the exported LoRA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.conftest import REPO, tiny_spec, write_spec
from trainer.checkpoint import TrainingState, save_checkpoint, trainable_state
from trainer.models.base import ModelFamily
from trainer.spec import JobSpec, parse_spec

PROMPTS = ["a red apple", "a blue car"]


def spec_data(family: str, finetune: str = "lora", **algorithm: float) -> dict:
    """examples/tiny-native.json on this family's tiny model; LoRA rank 4, alpha 6 (scale 1.5)."""
    data = tiny_spec(algorithm=algorithm, prompts={"source": "builtin:colors", "eval": PROMPTS})
    data["model"] = {"family": family, "path": "builtin:tiny", "finetune": finetune}
    if finetune == "lora":
        data["model"] |= {"lora_rank": 4, "lora_alpha": 6.0}
    return data


def lora_spec(family: str, **algorithm: float) -> JobSpec:
    return parse_spec(spec_data(family, **algorithm))


def trained_checkpoint(family: ModelFamily, tmp_path: Path) -> Path:
    """A checkpoint whose adapter is far from its B = 0 start: every trainable weight drawn at random."""
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for param in family.transformer.parameters():
            if param.requires_grad:
                param.copy_(0.2 * torch.randn(param.shape, generator=generator))
    return save_checkpoint(tmp_path / "job", 3, TrainingState(trainable_state(family.transformer), {}))


def velocity(family: ModelFamily, module: torch.nn.Module) -> torch.Tensor:
    generator = torch.Generator().manual_seed(11)
    x = torch.randn(2, *family.latent_shape, generator=generator)
    with torch.no_grad():
        return family.forward(module, x, torch.tensor([0.7, 0.3]), family.encode_prompts(PROMPTS))


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def trained(spec: JobSpec, tmp_path: Path) -> tuple[ModelFamily, Path]:
    from trainer.models.loading import load_family

    family = load_family(spec.model, torch.device("cpu"))
    return family, trained_checkpoint(family, tmp_path)


def base_transformer(family: ModelFamily, spec: JobSpec) -> torch.nn.Module:
    """The untrained transformer, read afresh from the tiny model's folder."""
    from trainer.models.loading import model_directory

    kind = type(family.transformer.get_base_model())  # type: ignore[operator]
    return kind.from_pretrained(model_directory(spec.model) / "transformer")


@pytest.mark.parametrize("family_name", ["sd3", "flux", "wan", "qwen_image"])
def test_a_diffusers_lora_export_loads_into_the_family_pipeline_with_the_trained_velocity(
    tiny_family_dirs: dict[str, Path], tmp_path: Path, family_name: str
) -> None:
    import diffusers

    from trainer.export.write import PIPELINES, export

    spec = lora_spec(family_name)
    family, checkpoint = trained(spec, tmp_path)
    out = export(spec, checkpoint, "diffusers", tmp_path / "diffusers")
    keys = load_file(str(out / "pytorch_lora_weights.safetensors"))
    assert keys and all(k.startswith("transformer.") and ".lora_" in k for k in keys)
    pipeline = getattr(diffusers, PIPELINES[family_name])
    parts = {name: None for name in pipeline._get_signature_keys(pipeline)[0]}  # the pipeline's components
    pipe = pipeline(**{**parts, "transformer": base_transformer(family, spec), "scheduler": None})
    pipe.load_lora_weights(out)
    assert relative(velocity(family, pipe.transformer), velocity(family, family.transformer)) < 1e-5


def comfyui_accepted_keys(transformer: torch.nn.Module) -> dict[str, str]:
    """ComfyUI's ``model_lora_keys_unet`` for SD3 and FLUX, transcribed (comfyanonymous/ComfyUI, comfy/lora.py):
    for each diffusers weight name k (``mmdit_to_diffusers`` / ``flux_to_diffusers``, the bare transformer's
    state dict here) it accepts ``transformer.<k>``, ``lora_transformer_<k with . as _>`` and, for SD3,
    ``base_model.model.<k>``, each without the ``.weight``."""
    accepted = {}
    for key in transformer.state_dict():
        if key.endswith(".weight"):
            module = key.removesuffix(".weight")
            accepted[f"transformer.{module}"] = key
            accepted["lora_transformer_" + module.replace(".", "_")] = key
    return accepted


@pytest.mark.parametrize("family_name", ["sd3", "flux"])
def test_the_comfyui_export_names_each_adapted_weight_by_a_key_comfyuis_map_accepts(
    tiny_family_dirs: dict[str, Path], tmp_path: Path, family_name: str
) -> None:
    from peft.tuners.lora import LoraLayer

    from trainer.export.write import export

    spec = lora_spec(family_name)
    family, checkpoint = trained(spec, tmp_path)
    state = load_file(str(export(spec, checkpoint, "comfyui", tmp_path / "comfyui")))
    accepted = comfyui_accepted_keys(base_transformer(family, spec))
    entries = {key.rsplit(".", 2)[0] if key.endswith(".weight") else key.rsplit(".", 1)[0] for key in state}
    adapted = {
        name.removeprefix("base_model.model.") + ".weight"
        for name, module in family.transformer.named_modules()
        if isinstance(module, LoraLayer)
    }
    assert {accepted[entry] for entry in entries} == adapted
    assert all({f"{e}.lora_up.weight", f"{e}.lora_down.weight", f"{e}.alpha"} <= set(state) for e in entries)
    assert len(state) == 3 * len(entries) and all(float(state[f"{e}.alpha"]) == 6.0 for e in entries)


def test_merged_weights_are_the_base_plus_scale_b_a_and_give_the_lora_models_velocity(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from diffusers import SD3Transformer2DModel
    from peft.tuners.lora import LoraLayer

    from trainer.export.write import export

    spec = lora_spec("sd3")
    family, checkpoint = trained(spec, tmp_path)
    merged = SD3Transformer2DModel.from_pretrained(export(spec, checkpoint, "merged", tmp_path / "merged"))
    base, weights = base_transformer(family, spec).state_dict(), merged.state_dict()
    adapters = {n: m for n, m in family.transformer.named_modules() if isinstance(m, LoraLayer)}
    for name, adapter in adapters.items():
        key = name.removeprefix("base_model.model.") + ".weight"
        b_a = adapter.lora_B["default"].weight @ adapter.lora_A["default"].weight
        assert torch.allclose(weights[key], base[key] + (6.0 / 4) * b_a, atol=1e-6), key
    assert adapters and all(torch.equal(v, base[k]) for k, v in weights.items() if k.rsplit(".", 1)[0] not in {
        n.removeprefix("base_model.model.") for n in adapters
    })  # fmt: skip
    assert relative(velocity(family, merged), velocity(family, family.transformer)) < 1e-5


def test_a_full_fine_tune_exports_a_transformer_folder_from_pretrained_loads(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from trainer.export.write import export
    from trainer.models.loading import load_family

    spec = parse_spec(spec_data("sd3", "full"))
    family = load_family(spec.model, torch.device("cpu"))
    checkpoint = trained_checkpoint(family, tmp_path)
    loaded = type(family.transformer).from_pretrained(export(spec, checkpoint, "diffusers", tmp_path / "full"))
    trained_weights = family.transformer.state_dict()
    assert all(torch.equal(value, trained_weights[key]) for key, value in loaded.state_dict().items())


@pytest.mark.parametrize(
    ("family_name", "finetune", "name"),
    [("wan", "lora", "comfyui"), ("sd3", "full", "merged"), ("sd3", "full", "comfyui"), ("sd3", "lora", "onnx")],
)
def test_an_export_format_the_model_lacks_exits_2_naming_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], family_name: str, finetune: str, name: str
) -> None:
    from trainer.__main__ import main

    path = write_spec(tmp_path / "spec.json", spec_data(family_name, finetune))
    out = tmp_path / "x"
    argv = ["export", "--spec", str(path), "--checkpoint", str(tmp_path), "--format", name, "--out", str(out)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"spec error: format: {name!r} is not an export of a {family_name} {finetune} fine-tune")
    assert not out.exists()


def test_a_plain_diffusers_pipeline_with_the_exported_lora_draws_the_trainers_eval_images(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """The acceptance check: the trainer's eval sampler (``sample_ode``, as ``evaluate`` calls it: the job's σ grid,
    CFG 4.5 against the empty prompt, x_0 from each seed's eval stream) against StableDiffusion3Pipeline's own
    ``__call__`` in a fresh interpreter, built from the tiny base with ``from_pretrained`` and the LoRA loaded with
    ``load_lora_weights``, given the same prompts, x_0, step count and guidance."""
    from trainer.export.write import export
    from trainer.job import TrainingJob
    from trainer.rollout import sample_ode
    from trainer.sampling.noise import SampleNoise
    from trainer.seeding import stream_seed

    spec = lora_spec("sd3", cfg_scale=4.5, sampling_steps=8)
    job = TrainingJob.build(spec, "sharded")
    checkpoint = trained_checkpoint(job.family, tmp_path)
    seeds = [0, 1]
    ours = sample_ode(job.denoiser, job.policy, job.conditioning(PROMPTS), job.unconditional(PROMPTS), seeds)
    latents = SampleNoise.seeded([stream_seed("eval", s) for s in seeds], torch.device("cpu")).initial(
        job.family.latent_shape
    )
    height, width = ours.shape[-2:]
    inputs = {
        "prompts": PROMPTS, "latents": latents, "steps": 8, "guidance": 4.5, "height": height, "width": width,
        "t5_sequence": job.family.t5_sequence,  # type: ignore[attr-defined]
    }  # fmt: skip
    torch.save(inputs, tmp_path / "inputs.pt")
    lora = export(spec, checkpoint, "diffusers", tmp_path / "diffusers")
    script = REPO / "tests" / "trainer" / "diffusers_reload.py"
    paths = [str(p) for p in (tiny_model_dir, lora, tmp_path / "inputs.pt", tmp_path / "theirs.pt")]
    subprocess.run([sys.executable, str(script), *paths], check=True, cwd=tmp_path)
    theirs = torch.load(tmp_path / "theirs.pt")
    difference = float((theirs - ours).abs().max())
    with job.policy.disable_adapter():  # type: ignore[operator]
        base = sample_ode(job.denoiser, job.policy, job.conditioning(PROMPTS), job.unconditional(PROMPTS), seeds)
    moved = float((base - ours).abs().max())
    print(f"max pixel difference (images in [0, 1]): {difference:.3e}; the LoRA moves them by {moved:.3e}")
    assert difference < 1e-5 < moved  # the LoRA changes the images; the reload does not


def test_the_cli_exports_the_jobs_final_model_folder_as_it_exports_the_checkpoint(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainer.__main__ import main
    from trainer.checkpoint import export_model

    spec = spec_data("sd3")
    family, checkpoint = trained(parse_spec(spec), tmp_path)
    export_model(family.transformer, tmp_path / "job" / "model")  # what a finished job leaves in model/
    path = write_spec(tmp_path / "spec.json", spec)
    files = []
    for source, out in ((checkpoint, tmp_path / "a"), (tmp_path / "job" / "model", tmp_path / "b")):
        argv = ["export", "--spec", str(path), "--checkpoint", str(source), "--format", "comfyui", "--out", str(out)]
        assert main(argv) == 0
        files.append(load_file(str(out / "comfyui_lora.safetensors")))
    assert "comfyui export written to" in capsys.readouterr().out
    assert files[0].keys() == files[1].keys() and all(torch.equal(files[0][k], files[1][k]) for k in files[0])
