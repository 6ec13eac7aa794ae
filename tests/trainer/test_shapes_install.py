"""builtin:shapes is used only as a copy that matches the committed checksums; damage is replaced, never loaded."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import pytest

from trainer.models.builtin_shapes import (
    CHECKSUM_FILE,
    COMMITTED_MODEL,
    CorruptModelError,
    checksum_lines,
    ensure_builtin_shapes,
)
from trainer.spec import parse_spec, spec_errors

WEIGHTS = "transformer/diffusion_pytorch_model.safetensors"


def test_committed_weights_match_their_checksums_and_fit_in_ten_megabytes() -> None:
    assert (COMMITTED_MODEL / CHECKSUM_FILE).read_text() == checksum_lines(COMMITTED_MODEL)
    assert sum(p.stat().st_size for p in COMMITTED_MODEL.rglob("*") if p.is_file()) <= 10 * 2**20


def test_a_truncated_cached_file_is_replaced_by_the_committed_one(tmp_path: Path) -> None:
    target = ensure_builtin_shapes(tmp_path / "shapes")
    weights = target / WEIGHTS
    weights.write_bytes(weights.read_bytes()[:1000])
    assert ensure_builtin_shapes(tmp_path / "shapes") == target
    assert weights.read_bytes() == (COMMITTED_MODEL / WEIGHTS).read_bytes()


def test_a_cached_copy_missing_a_component_is_reinstalled(tmp_path: Path) -> None:
    target = ensure_builtin_shapes(tmp_path / "shapes")
    shutil.rmtree(target / "vae")
    ensure_builtin_shapes(tmp_path / "shapes")
    assert (target / "vae" / "config.json").read_bytes() == (COMMITTED_MODEL / "vae" / "config.json").read_bytes()


def test_damaged_committed_weights_are_refused_with_the_rebuild_command(tmp_path: Path) -> None:
    source = tmp_path / "committed"
    shutil.copytree(COMMITTED_MODEL, source)
    weights = source / WEIGHTS
    weights.write_bytes(b"\0" + weights.read_bytes()[1:])
    with pytest.raises(CorruptModelError, match=r"trainer\.models\.shapes_build"):
        ensure_builtin_shapes(tmp_path / "shapes", source=source)
    assert not (tmp_path / "shapes").exists()


def _install(target: str) -> None:
    ensure_builtin_shapes(Path(target))


def test_two_workers_installing_at_once_leave_one_complete_copy(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_install, args=(str(tmp_path / "shapes"),)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert checksum_lines(tmp_path / "shapes") == (COMMITTED_MODEL / CHECKSUM_FILE).read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".shapes.installing")] == []


def test_shapes_model_is_sd3_only() -> None:
    with pytest.raises(ValueError) as info:
        parse_spec({"model": {"path": "builtin:shapes", "family": "flux"}})
    assert [e["field"] for e in spec_errors(info.value)] == ["model.family"]
