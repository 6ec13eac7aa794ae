"""The advisor's probe end to end on the tiny model (CPU): every executor measured at two K and two batch sizes,
a refused executor (jagg: K = 3 holds no group of 4) reported on its own row, and a budget between the
executors' predicted peaks that excludes lean_retain (whose K graphs stay alive) from the recommendation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.services.advice_verdict import advice_answer
from tests.executors.conftest import audit_spec, torchrun
from trainer.probe.measure import TIMED_ROUNDS, probe
from trainer.run import load_spec
from trainer.spec.advice import predict
from trainer.spec.probe_report import ProbeReport

SPEC = audit_spec(algorithm={"sampling_steps": 5, "train_timesteps": 3, "prompts_per_step": 2, "group_size": 2})


@pytest.fixture(scope="module")
def probed(
    tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path
) -> tuple[Path, ProbeReport]:
    path = tmp_path_factory.mktemp("probe") / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path, probe(path, ["native", "lean_retain", "jagg"])


def test_each_runnable_executor_is_measured_at_two_k_and_two_batch_sizes(probed: tuple[Path, ProbeReport]) -> None:
    _, report = probed
    measured = {e.name: {(p.trained, p.rows) for p in e.points} for e in report.executors if e.points}
    assert measured == {name: {(2, 2), (2, 4), (3, 2), (3, 4)} for name in ("native", "lean_retain")}
    assert {c.rows for c in report.unit_costs} == {1, 2, 4}
    assert report.resident_bytes > 0


def test_each_point_keeps_every_interleaved_rounds_step_time(probed: tuple[Path, ProbeReport]) -> None:
    _, report = probed
    for measured in (e for e in report.executors if e.points):
        assert all(len(point.round_seconds) == TIMED_ROUNDS for point in measured.points)


def test_every_predicted_speedup_has_an_interval_from_the_rounds(probed: tuple[Path, ProbeReport]) -> None:
    path, report = probed
    answer = advice_answer(predict(load_spec(path), report), None)
    retain = next(row for row in answer.executors if row.executor == "lean_retain")
    assert answer.rounds == TIMED_ROUNDS and retain.speedup_interval is not None
    assert retain.speedup_interval.low <= (retain.speedup or 0) <= retain.speedup_interval.high


def test_retains_step_peak_grows_with_k_and_natives_does_not_as_much(probed: tuple[Path, ProbeReport]) -> None:
    _, report = probed
    peaks = {e.name: {(p.trained, p.rows): p.peak_bytes for p in e.points} for e in report.executors}
    retain, native = peaks["lean_retain"], peaks["native"]
    assert retain[(3, 4)] - retain[(2, 4)] > 2 * (native[(3, 4)] - native[(2, 4)])


def test_an_executor_that_cannot_run_the_spec_is_reported_on_its_row(probed: tuple[Path, ProbeReport]) -> None:
    _, report = probed
    jagg = next(e for e in report.executors if e.name == "jagg")
    assert not jagg.points and jagg.error is not None and "group_width" in jagg.error


def test_the_probe_classes_the_lean_executors_as_exact(probed: tuple[Path, ProbeReport]) -> None:
    _, report = probed
    retain = next(e for e in report.executors if e.name == "lean_retain")
    assert retain.exactness == "E0" and retain.gradient_rel_l2 == 0.0


def test_a_budget_below_retains_prediction_recommends_another_executor(probed: tuple[Path, ProbeReport]) -> None:
    path, report = probed
    spec = load_spec(path)
    unbounded = {row.executor: row for row in predict(spec, report).executors}
    retain, native = unbounded["lean_retain"].peak_memory_bytes, unbounded["native"].peak_memory_bytes
    assert retain is not None and native is not None and retain > native
    answer = advice_answer(predict(spec, report), (retain + native) // 2)
    rows = {row.executor: row for row in answer.executors}
    assert not rows["lean_retain"].fits_budget and "budget" in rows["lean_retain"].reason
    assert answer.recommended == "native" and rows["native"].fits_budget
    assert rows["jagg"].samples_per_s is None and rows["jagg"].reason.startswith("jagg: no prediction")


@pytest.mark.slow
def test_two_gloo_ranks_probe_digenrl_through_its_two_pools(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """digenrl's pools (one generator, one trainer) are probed like the others; peaks are the maximum over ranks."""
    spec = audit_spec(
        algorithm={"sampling_steps": 4, "train_timesteps": 3, "prompts_per_step": 2, "group_size": 2},
        resources={"devices": 2},
        executor={"name": "digenrl"},
    )
    out = tmp_path / "probe"
    result = torchrun(tmp_path, sfumato_home, spec, "probe", "--output-dir", str(out), "--executors", "digenrl")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = ProbeReport.model_validate_json((out / "probe.json").read_text())
    assert report.world_size == 2
    digenrl = next(e for e in report.executors if e.name == "digenrl")
    assert digenrl.error is None and digenrl.exactness == "E1" and (digenrl.gradient_rel_l2 or 0.0) <= 1e-5
    assert {(p.trained, p.prompts) for p in digenrl.points} == {(2, 1), (2, 2), (3, 1), (3, 2)}
    answer = predict(load_spec(tmp_path / "spec.json"), report)
    row = next(r for r in answer.executors if r.executor == "digenrl")
    assert row.samples_per_s and row.speedup and row.peak_memory_bytes and row.peak_memory_bytes > report.resident_bytes
