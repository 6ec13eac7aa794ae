"""The committed spec reference is what docs/generate_spec_reference.py makes from trainer/spec/ now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_spec_reference_is_up_to_date_with_the_schema() -> None:
    result = subprocess.run(
        [sys.executable, "docs/generate_spec_reference.py", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_spec_reference_documents_every_field_of_every_section() -> None:
    from trainer.spec import JobSpec

    text = (REPO / "docs" / "spec-reference.md").read_text()
    for name, field in JobSpec.model_fields.items():
        assert f"| `{name}` |" in text
        # list[RewardSpec] → RewardSpec; the executor's union → every executor's options model
        sections = get_args(field.annotation) or (field.annotation,)
        for section in sections if name == "executor" else sections[:1]:
            for inner in getattr(section, "model_fields", {}):
                assert f"| `{inner}` |" in text, f"{name}.{inner} is missing"
