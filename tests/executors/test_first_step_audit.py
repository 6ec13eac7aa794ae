"""``executor.audit_first_step: true``: the run logs the audit's cosine and relative L2 against native on its
first step, once, with the figures ``python -m trainer audit`` gives for the same spec; the run trains on as it would
have without the audit; a NaN figure reads as a failed audit, never as a cosine."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import read_metrics, torchrun, write_spec
from trainer.audit import audit
from trainer.first_step_audit import audit_metrics
from trainer.run import run

# T = 6, K = 5, width 4: one routed group, so jagg's gradient is class A's and differs from native's.


def jagg_spec(audited: bool, executor: str = "jagg") -> dict[str, Any]:
    return audit_spec(
        algorithm={"sampling_steps": 6, "train_timesteps": 5, "total_steps": 2},
        executor={"name": executor, "group_width": 4, "audit_first_step": audited},
    )


@pytest.mark.parametrize("executor", ["jagg", "jagg_retain"])  # jagg_retain is also audited against jagg
def test_the_first_step_logs_the_audit_s_own_cosine_and_rel_l2_once(
    tmp_path: Path, sfumato_home: Path, executor: str
) -> None:
    spec_path = write_spec(tmp_path / "spec.json", jagg_spec(audited=True, executor=executor))
    run(spec_path, tmp_path / "out", resume=False)
    first, second = read_metrics(tmp_path / "out")
    expected = audit(spec_path, ["native", executor])["executors"][executor]
    assert first["audit/cosine"] == pytest.approx(expected["cosine"], rel=1e-9, abs=1e-12)
    assert first["audit/rel_l2"] == pytest.approx(expected["rel_l2"], rel=1e-9, abs=1e-12)
    assert first["audit/rel_l2"] > 0 and first["audit/failed"] == 0.0
    assert not [key for key in second if key.startswith("audit/")]


def test_the_audited_run_trains_as_the_unaudited_one(tmp_path: Path, sfumato_home: Path) -> None:
    for audited in (True, False):
        run(write_spec(tmp_path / f"{audited}.json", jagg_spec(audited)), tmp_path / str(audited), resume=False)
    with_audit, without = read_metrics(tmp_path / "True"), read_metrics(tmp_path / "False")
    for key in ("loss", "reward/mean", "grad_norm"):
        assert [m[key] for m in with_audit] == [m[key] for m in without], key


def test_on_two_fsdp_ranks_the_first_step_logs_the_one_rank_audit_s_figures(tmp_path: Path, sfumato_home: Path) -> None:
    spec = jagg_spec(audited=True)
    one_rank = audit(write_spec(tmp_path / "one.json", spec), ["native", "jagg"])["executors"]["jagg"]
    spec["model"] |= {"sharding": "fsdp"}
    spec["resources"] = {**spec["resources"], "devices": 2}
    done = torchrun(tmp_path, sfumato_home, spec, "run", "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-3000:]
    first = read_metrics(tmp_path / "out")[0]
    assert first["sharding/fsdp"] == 1.0 and first["audit/failed"] == 0.0
    assert first["audit/cosine"] == pytest.approx(one_rank["cosine"], abs=1e-6)
    assert first["audit/rel_l2"] == pytest.approx(one_rank["rel_l2"], rel=1e-4)


def test_a_nan_figure_is_left_out_and_fails_the_audit() -> None:
    logged = audit_metrics({"cosine": math.nan, "rel_l2": 0.01, "verdict": "report"})  # even where no verdict failed
    assert logged == {"audit/rel_l2": 0.01, "audit/failed": 1.0}
