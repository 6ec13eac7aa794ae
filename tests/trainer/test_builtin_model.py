"""The tiny built-in model is built from configs, saved, and loaded back through from_pretrained."""

from __future__ import annotations

from pathlib import Path

import torch

from trainer.models.builtin_tiny import build_tiny, ensure_builtin_tiny
from trainer.models.sd3 import SD3Family


def test_tiny_model_round_trips_through_save_and_from_pretrained(tiny_model_dir: Path, tmp_path: Path) -> None:
    family = SD3Family(tiny_model_dir, torch.device("cpu"), torch.float32)
    cond = family.encode_prompts(["a red apple", "a blue car"])
    x = torch.randn(2, *family.latent_shape, generator=torch.Generator().manual_seed(0))
    sigma = torch.tensor([0.5, 0.9])
    with torch.no_grad():
        before = family.forward(family.transformer, x, sigma, cond)
    family.transformer.save_pretrained(tmp_path / "transformer")
    reloaded = type(family.transformer).from_pretrained(tmp_path / "transformer")
    with torch.no_grad():
        after = family.forward(reloaded, x, sigma, cond)
    assert torch.equal(before, after)
    images = family.decode(x)
    assert images.shape == (2, 3, 32, 32) and float(images.min()) >= 0 and float(images.max()) <= 1


def test_building_twice_gives_identical_weights(tmp_path: Path, tiny_model_dir: Path) -> None:
    build_tiny(tmp_path / "again")
    first = (tiny_model_dir / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes()
    second = (tmp_path / "again" / "transformer" / "diffusion_pytorch_model.safetensors").read_bytes()
    assert first == second


def test_existing_model_is_reused_not_rebuilt(tiny_model_dir: Path) -> None:
    stamp = (tiny_model_dir / "model_index.json").stat().st_mtime_ns
    assert ensure_builtin_tiny() == tiny_model_dir
    assert (tiny_model_dir / "model_index.json").stat().st_mtime_ns == stamp


def test_tokenizer_distinguishes_colour_words(tiny_model_dir: Path) -> None:
    family = SD3Family(tiny_model_dir, torch.device("cpu"), torch.float32)
    tokenizer = family.clip_tokenizers[0]
    ids = tokenizer(["a red apple", "a blue apple"]).input_ids
    assert ids[0] != ids[1] and tokenizer.unk_token_id not in ids[0]


def _build_on_rank(rank: int, init_file: str, target: str) -> None:
    """Rank 1 of a gloo group builds the model first, as a second rank or node may on a fresh home."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    if rank == 1:
        ensure_builtin_tiny(Path(target))
    dist.barrier()
    dist.destroy_process_group()


def test_a_non_zero_rank_builds_a_complete_model(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    target = tmp_path / "tiny"
    mp.spawn(_build_on_rank, args=(str(tmp_path / "init"), str(target)), nprocs=2)
    assert (target / "text_encoder" / "model.safetensors").stat().st_size > 0
    assert (target / "transformer" / "diffusion_pytorch_model.safetensors").exists()


def test_tiny_vae_latent_channels_steer_the_image_colour(tiny_model_dir: Path) -> None:
    """Without this a colour reward has nothing to learn from (bench/learn.py)."""
    family = SD3Family(tiny_model_dir, torch.device("cpu"), torch.float32)
    x = torch.randn(8, *family.latent_shape, generator=torch.Generator().manual_seed(0))
    base = family.decode(x).mean(dim=(0, 2, 3))
    for channel in range(3):
        shifted = x.clone()
        shifted[:, channel] += 0.5
        change = family.decode(shifted).mean(dim=(0, 2, 3)) - base
        assert int(change.argmax()) == channel and float(change[channel]) > 0.05
