"""The shapes model's build is deterministic: the same command writes the same bytes (here, a few steps of it)."""

from __future__ import annotations

from pathlib import Path

from trainer.models.builtin_shapes import CHECKSUM_FILE, checksum_lines
from trainer.models.shapes_build import build


def test_building_twice_writes_identical_files(tmp_path: Path) -> None:
    build(tmp_path / "first", vae_steps=2, transformer_steps=2)
    build(tmp_path / "second", vae_steps=2, transformer_steps=2)
    first = (tmp_path / "first" / CHECKSUM_FILE).read_text()
    assert first == (tmp_path / "second" / CHECKSUM_FILE).read_text()
    assert first == checksum_lines(tmp_path / "first") and "transformer/config.json" in first
