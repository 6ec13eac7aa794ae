"""Trainer fixtures: one tiny built-in model per session, in a temporary SFUMATO_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import torch

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def one_thread_per_process() -> Iterator[None]:
    """The CPU is shared with other test runs: two OpenMP threads per op ran 20 times slower
    than one there. The trainer (and torchrun's ranks) read OMP_NUM_THREADS."""
    import torch

    patch = pytest.MonkeyPatch()
    patch.setenv("OMP_NUM_THREADS", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    patch.undo()


@pytest.fixture(scope="session")
def sfumato_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sfumato-home")
    patch = pytest.MonkeyPatch()
    patch.setenv("SFUMATO_HOME", str(home))
    yield home
    patch.undo()


@pytest.fixture(scope="session")
def tiny_model_dir(sfumato_home: Path) -> Path:
    from trainer.models.builtin_tiny import ensure_builtin_tiny

    return ensure_builtin_tiny()


@pytest.fixture(scope="session")
def tiny_family_dirs(sfumato_home: Path) -> dict[str, Path]:
    """The tiny model of every family, built once per session."""
    from trainer.models.builtin_tiny import ensure_builtin_tiny
    from trainer.spec import BUILTIN_FAMILIES

    return {family: ensure_builtin_tiny(family=family) for family in BUILTIN_FAMILIES}


@pytest.fixture(scope="session")
def sd35_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny SD3.5 Medium and Large checkpoints (``model.family`` sd3, a local ``model.path``), built once."""
    from trainer.models.tiny_sd35 import build_tiny_sd35

    root = tmp_path_factory.mktemp("sd35")
    return {variant: build_tiny_sd35(root / variant, variant) for variant in ("medium", "large")}


@pytest.fixture(scope="session")
def wan22_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Wan 2.2 TI2V-5B checkpoint (``model.family`` wan, a local ``model.path``), built once."""
    from trainer.models.tiny_wan22 import build_tiny_wan22

    return build_tiny_wan22(tmp_path_factory.mktemp("wan22") / "model")


@pytest.fixture(scope="session")
def kontext_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny FLUX.1 Kontext checkpoint (``model.family`` flux_kontext, a FluxKontextPipeline folder), built once."""
    from trainer.models.tiny_flux_kontext import build_tiny_flux_kontext

    return build_tiny_flux_kontext(tmp_path_factory.mktemp("kontext") / "model")


@pytest.fixture(scope="session")
def qwen_edit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen-Image-Edit checkpoint (``model.family`` qwen_image_edit, a QwenImageEditPipeline folder), built
    once."""
    from trainer.models.tiny_qwen_image_edit import build_tiny_qwen_image_edit

    return build_tiny_qwen_image_edit(tmp_path_factory.mktemp("qwen-edit") / "model")


@pytest.fixture(scope="session")
def wan_i2v_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Wan 2.1 I2V checkpoint (``model.family`` wan_i2v, a WanImageToVideoPipeline folder), built once."""
    from trainer.models.tiny_wan_i2v import build_tiny_wan_i2v

    return build_tiny_wan_i2v(tmp_path_factory.mktemp("wan-i2v") / "model")


# An edit set's rows: the first two share their instruction and differ in their image (conditioning is per row).
EDIT_ROWS = [
    ("make the ball red", "images/blue.png", (0.1, 0.2, 0.9)),
    ("make the ball red", "images/green.png", (0.1, 0.7, 0.1)),
    ("a yellow car", "images/white.png", (1.0, 1.0, 1.0)),
    ("paint the sky orange", "images/sky.png", (0.4, 0.6, 1.0)),
]


def write_edit_set(folder: Path, size: int = 32) -> Path:
    """An edit set folder: ``train.jsonl`` of the rows above, ``test.jsonl`` of the last two, and their images,
    each a disc of its colour on grey (PNG, ``size`` px)."""
    from PIL import Image, ImageDraw

    (folder / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for prompt, image, colour in EDIT_ROWS:
        picture = Image.new("RGB", (size, size), (128, 128, 128))
        fill = tuple(int(255 * c) for c in colour)
        ImageDraw.Draw(picture).ellipse((size // 4, size // 4, 3 * size // 4, 3 * size // 4), fill=fill)
        picture.save(folder / image)
        lines.append(json.dumps({"prompt": prompt, "image": image}))
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "test.jsonl").write_text("\n".join(lines[2:]) + "\n")
    return folder


@pytest.fixture(scope="session")
def edit_set_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small edit set (``prompts.source`` of the image families), written once."""
    return write_edit_set(tmp_path_factory.mktemp("edit-set"))


def tiny_spec(**overrides: Any) -> dict[str, Any]:
    """examples/tiny-native.json with sections overridden (shallow merge per section)."""
    spec = json.loads((REPO / "examples" / "tiny-native.json").read_text())
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(json.dumps(spec))
    return path


def read_metrics(output_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (output_dir / "metrics.jsonl").read_text().splitlines()]


def torchrun(
    tmp_path: Path, home: Path, spec: dict[str, Any], *command: str, timeout: int = 150, ranks: int = 2
) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc-per-node <ranks> -m trainer <command> --spec …`` with gloo ranks (two by default)."""
    spec_path = write_spec(tmp_path / "spec.json", spec)
    env = {**os.environ, "SFUMATO_HOME": str(home)}
    env.pop("SFUMATO_API_URL", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            str(ranks),
            "-m",
            "trainer",
            *command,
            "--spec",
            str(spec_path),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sd3_sigmas(steps: int) -> torch.Tensor:
    """The tiny SD3 model's grid (SD3.5-Medium's scheduler config) for ``steps`` steps, as jobs sample on it."""
    from trainer.models.builtin_tiny import SCHEDULER_CONFIG
    from trainer.sampling.schedule import CheckpointSchedule

    config = {"_class_name": "FlowMatchEulerDiscreteScheduler", **SCHEDULER_CONFIG}
    return CheckpointSchedule(config, "sd3").sigmas(steps, image_tokens=0)
