"""The ratio distance a capture carries (the largest distance of the step's ratios from 1, the executor's
``ratio/max_abs_dev``): the audit reports it to show that its first update starts at ratio 1, so a capture that
dropped it would read 0 and hide a step that did not."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.executors.conftest import audit_spec
from trainer.audit import AuditSession, Variant
from trainer.spec import parse_spec


def test_a_step_from_other_weights_than_the_rollout_s_carries_its_ratios_distance_from_1(
    sfumato_home: Path, tiny_model_dir: Path
) -> None:
    session = AuditSession(parse_spec(audit_spec()), ["native"])
    with torch.no_grad():
        session.weights = [w * 1.05 for w in session.weights]  # the step starts off the policy that rolled out
    assert session.capture("native", variant=Variant(updates=1)).ratio_distance > 1e-3
