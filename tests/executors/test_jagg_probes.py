"""JAGG's training-time probes: every `probe_every` steps each routed group's exact gradient is formed too,
its cosine with the aggregated one logged, and a warning printed under `cosine_warn`; the update never
changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import read_metrics, write_spec
from trainer.run import run

ROUTING = {"name": "jagg", "group_width": 2, "jagg_frac": 1.0}  # K = 5: two routed groups of 2, one step exact


def train(tmp_path: Path, name: str, **executor: Any) -> list[dict[str, float]]:
    spec = audit_spec(algorithm={"sampling_steps": 6, "total_steps": 2}, executor={**ROUTING, **executor})
    out = tmp_path / name
    run(write_spec(tmp_path / f"{name}.json", spec), out, resume=False)
    return read_metrics(out)


def test_a_probe_step_logs_each_routed_group_s_cosine_and_leaves_the_update_unchanged(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    plain = train(tmp_path, "plain")
    probed = train(tmp_path, "probed", probe_every=2)

    assert not any(key.startswith("executor/probe_cosine") for key in probed[0])
    cosines = [probed[1]["executor/probe_cosine/g0"], probed[1]["executor/probe_cosine/g1"]]
    assert all(cosine >= 1 - 1e-9 for cosine in cosines)  # W = 2: both steps are endpoints, the aggregate is exact
    for key in ("loss", "grad_norm", "reward/mean"):
        assert [m[key] for m in probed] == [m[key] for m in plain], key


def test_a_probe_cosine_below_cosine_warn_is_printed_in_the_job_log(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(tmp_path, "warned", probe_every=1, cosine_warn=1.0)

    log = capsys.readouterr().out
    assert "jagg: step 1 routed group 0 cosine" in log and "below cosine_warn 1.0" in log
    assert "jagg: step 2 routed group 1 cosine" in log
