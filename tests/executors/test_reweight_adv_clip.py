"""lean_reweight's default ``on_adv_clip: fail``: with a global std its deferred correction assumes |A| ≤ adv_clip;
when the clip bites the step stops with a message naming the option, before any update."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import write_spec
from trainer.executors.lean_reweight import AdvantageClipError
from trainer.run import run


def test_a_biting_advantage_clip_stops_lean_reweight_by_default(tmp_path: Path, sfumato_home: Path) -> None:
    spec = audit_spec(algorithm={"global_std": True, "adv_clip": 0.1}, executor={"name": "lean_reweight"})
    with pytest.raises(AdvantageClipError, match=r"> adv_clip 0\.1.*executor\.on_adv_clip"):
        run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = tmp_path / "out" / "metrics.jsonl"
    assert not metrics.exists() or metrics.read_text() == ""  # no step was recorded
