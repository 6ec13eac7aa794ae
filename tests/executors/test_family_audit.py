"""The executors' audit on one spec per model family added for issue 31, each its tiny model: Flow-GRPO full
fine-tuning, lean_retain and lean_reweight against native (docs/executors.md §4). ``pytest -s`` prints each
verdict, the table in docs/trainer.md ("Audited families")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from trainer.audit import audit
from trainer.models.tiny_wan22 import TINY_SIZE
from trainer.spec.model import IMAGE_FAMILIES

AUDITED = ["lean_retain", "lean_reweight"]


def family_models(
    sd35_dirs: dict[str, Path], wan22_dir: Path, kontext_dir: Path, qwen_edit_dir: Path
) -> dict[str, dict[str, Any]]:
    """Each added family's tiny model, as the spec's model section names it."""
    height, width, frames = TINY_SIZE
    wan22 = {"family": "wan", "path": str(wan22_dir), "resolution": [height, width], "num_frames": frames}
    return {
        "sd3.5-medium": {"family": "sd3", "path": str(sd35_dirs["medium"])},
        "wan2.2-ti2v-5b": wan22,
        "qwen-image": {"family": "qwen_image"},
        "flux.1-kontext": {"family": "flux_kontext", "path": str(kontext_dir)},
        "qwen-image-edit": {"family": "qwen_image_edit", "path": str(qwen_edit_dir), "resolution": [32, 32]},
    }


@pytest.mark.parametrize("case", ["sd3.5-medium", "wan2.2-ti2v-5b", "qwen-image", "flux.1-kontext", "qwen-image-edit"])
def test_the_audit_passes_the_lean_executors_on_each_added_family(
    tmp_path: Path,
    sd35_dirs: dict[str, Path],
    wan22_dir: Path,
    kontext_dir: Path,
    qwen_edit_dir: Path,
    edit_set_dir: Path,
    case: str,
) -> None:
    model = family_models(sd35_dirs, wan22_dir, kontext_dir, qwen_edit_dir)[case]
    prompts = {"source": str(edit_set_dir)} if model["family"] in IMAGE_FAMILIES else {}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(audit_spec(model=model, prompts=prompts)))
    executors: dict[str, Any] = audit(path, AUDITED)["executors"]
    print(case, {name: (executors[name]["class"], executors[name]["verdict"]) for name in AUDITED})
    assert [executors[name]["verdict"] for name in AUDITED] == ["pass", "pass"]
    assert all(executors[name]["grad_norm"] > 0 for name in AUDITED)
