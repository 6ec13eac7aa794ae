"""The audit's bf16 class (CPU bf16 autocast, fp32 master weights): native's own difference when its re-forward is
split one row per micro-batch is each update's and term's floor, the bound is FLOOR_SAFETY times it, and every exact
executor passes it on a step with a KL and two optimizer updates; the first update's ratio distance is reported for
native, its split and every executor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec, torchrun
from trainer.audit import CLASS_BOUNDS, FLOOR_SAFETY, audit
from trainer.spec import SpecError

TERMS = ["total", "policy", "kl"]
UPDATES = 2
SPEC = audit_spec(
    model={"precision": "bf16"},
    algorithm={"sampling_steps": 5, "kl_beta": 0.04, "inner_epochs": UPDATES},  # K = 4: one jagg group of width 4
    executor={"name": "lean_reweight", "kl": "extra_vjp", "after_first_update": "native"},
)


@pytest.fixture(scope="module")
def report(sfumato_home: Path, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("bf16-audit") / "spec.json"
    path.write_text(json.dumps(SPEC))
    return audit(path, ["lean_retain", "lean_reweight", "jagg"])


def test_the_report_says_bf16_and_judges_every_update_on_every_term(report: dict[str, Any]) -> None:
    assert (report["precision"], report["terms"], report["updates"]) == ("bf16", TERMS, UPDATES)
    for name, result in report["executors"].items():
        assert [u["update"] for u in result["updates"]] == [1, 2], name
        assert all(list(u["terms"]) == TERMS for u in result["updates"]), name


@pytest.mark.parametrize(("name", "exactness"), [("lean_retain", "E0"), ("lean_reweight", "E1")])
def test_every_exact_executor_passes_the_bf16_class_on_every_update_and_term(
    report: dict[str, Any], name: str, exactness: str
) -> None:
    result = report["executors"][name]
    assert (result["class"], result["exactness"], result["verdict"]) == ("bf16", exactness, "pass")
    for update in result["updates"]:
        for term, figures in update["terms"].items():
            assert figures["verdict"] == "pass" and figures["rel_l2"] <= figures["bound"], (update["update"], term)


def test_jagg_stays_class_a_in_bf16_and_is_reported(report: dict[str, Any]) -> None:
    jagg = report["executors"]["jagg"]
    assert (jagg["class"], jagg["exactness"], jagg["verdict"], jagg["bound"]) == ("A", "A", "report", None)


def test_native_s_floor_is_its_own_difference_one_row_a_micro_batch_and_is_not_zero_in_bf16(
    report: dict[str, Any],
) -> None:
    bf16 = report["native_floor"]
    assert (bf16["safety_factor"], bf16["rows"], bf16["micro_batches"]) == (FLOOR_SAFETY, 4, 4)
    assert list(bf16["floor"]) == TERMS
    for term in TERMS:
        assert len(bf16["floor"][term]) == UPDATES
        assert all(1e-4 < floor < 0.1 for floor in bf16["floor"][term]), term  # bf16 rounding, not an fp32 1e-7


def test_each_bf16_bound_is_the_safety_factor_times_its_floor_and_each_executor_is_held_to_it(
    report: dict[str, Any],
) -> None:
    bf16 = report["native_floor"]
    for term in TERMS:
        want = [max(FLOOR_SAFETY * floor, CLASS_BOUNDS["E1"]) for floor in bf16["floor"][term]]
        assert bf16["bound"][term] == pytest.approx(want, rel=1e-12), term
        for name in ("lean_retain", "lean_reweight"):
            held = [u["terms"][term]["bound"] for u in report["executors"][name]["updates"]]
            assert held == bf16["bound"][term], (name, term)
    assert report["executors"]["lean_reweight"]["bound"] == bf16["bound"]["total"][0]


def test_the_first_update_s_ratio_distance_is_reported_for_native_its_split_and_every_executor(
    report: dict[str, Any],
) -> None:
    """On the CPU the no-grad rollout and native's re-forward use the same kernels: native's first ratio is 1 exactly.
    The split re-forwards against the old log-probs its own micro-batches give, so its first ratio is 1 too;
    lean_reweight forms its first update at ratio 1 by construction."""
    assert report["native_first_update_ratio_distance"] == 0.0
    assert report["native_floor"]["native_split_first_update_ratio_distance"] == 0.0
    assert {name: r["first_update_ratio_distance"] for name, r in report["executors"].items()} == {
        "lean_retain": 0.0,
        "lean_reweight": 0.0,
        "jagg": 0.0,
    }


def test_an_fp32_audit_judges_e1_at_1e_5_where_native_s_own_fp32_floor_is_far_below(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(audit_spec()))
    report = audit(path, ["lean_reweight"])
    assert (report["precision"], report["terms"], report["updates"]) == ("fp32", ["total"], 1)
    assert 0 < report["native_floor"]["floor"]["total"][0] < 1e-6
    reweight = report["executors"]["lean_reweight"]
    assert (reweight["class"], reweight["bound"], reweight["verdict"]) == ("E1", CLASS_BOUNDS["E1"], "pass")


def test_a_bf16_audit_needs_two_samples_per_rank(
    tmp_path: Path, sfumato_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ranks (torchrun's WORLD_SIZE) and two samples: one sample a rank has no other micro-batch split."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(audit_spec(model={"precision": "bf16"}, algorithm={"prompts_per_step": 1})))
    with pytest.raises(SpecError) as refused:
        audit(path, ["lean_retain"])
    assert refused.value.field == "algorithm.prompts_per_step" and "2 or more samples per rank" in refused.value.message


@pytest.mark.slow
def test_digenrl_passes_the_bf16_class_on_two_gloo_ranks(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """One generator, one trainer, staleness 0: the trainer's gradient replayed in timestep batches, within the bf16
    bound of native's own split (each rank's two samples one a micro-batch)."""
    spec = audit_spec(model={"precision": "bf16"}, resources={"devices": 2}, executor={"name": "digenrl"})
    result = torchrun(tmp_path, sfumato_home, spec, "audit", "--executors", "native,digenrl", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") : result.stdout.rindex("}") + 1])
    digenrl = report["executors"]["digenrl"]
    assert (report["precision"], report["native_floor"]["micro_batches"]) == ("bf16", 2)
    assert (digenrl["class"], digenrl["exactness"], digenrl["verdict"]) == ("bf16", "E1", "pass")
    assert digenrl["rel_l2"] <= digenrl["bound"] and digenrl["first_update_ratio_distance"] == 0.0
