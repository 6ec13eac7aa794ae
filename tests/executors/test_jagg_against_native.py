"""JAGG's routed gradient against native's on the tiny SD3 model at T = 10, K = 9 (default width W = 4, two
routed groups: 8 of the 9 steps interpolated), where its audit cosine is about 0.995 and its relative L2 about
0.1. The bounds leave room for another CPU's rounding, not for a wrong routing: a flipped sign of the routed
gradient gives a negative cosine. Below ``cosine_warn`` the audit says warn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from trainer.audit import audit, verdict
from trainer.spec import JaggOptions

COSINE_WARN = 0.999  # above what the interpolation reaches here: this run's verdict is warn


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path) -> dict[str, Any]:
    spec = audit_spec(
        algorithm={"sampling_steps": 10}, executor={"name": "jagg", "group_width": 4, "cosine_warn": COSINE_WARN}
    )
    path = tmp_path_factory.mktemp("jagg-k9") / "spec.json"
    path.write_text(json.dumps(spec))
    return audit(path, ["jagg"])["executors"]["jagg"]


def test_jagg_s_routed_gradient_points_where_native_s_does(routed: dict[str, Any]) -> None:
    assert routed["class"] == "A" and routed["routed_groups"] == 2
    assert routed["cosine"] >= 0.98
    assert 0 < routed["rel_l2"] <= 0.25


def test_each_routed_group_s_aggregate_points_where_its_exact_gradient_does(routed: dict[str, Any]) -> None:
    """The high-noise group interpolates the most (0.95 here), the next one less (0.99)."""
    assert len(routed["group_cosines"]) == 2 and min(routed["group_cosines"]) >= 0.9


def test_a_cosine_under_cosine_warn_is_a_warn_verdict_and_above_it_a_report(routed: dict[str, Any]) -> None:
    assert routed["cosine"] < COSINE_WARN and routed["verdict"] == "warn"
    assert verdict(JaggOptions(cosine_warn=0.98), routed) == "report"
