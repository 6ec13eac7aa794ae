"""``make bench``'s configurations (bench/executors.py), checked without a timed run: the compute-bound regime
covers the configurations users run, and every registered executor is benched."""

from __future__ import annotations

from bench.executors import runs, target_lines
from trainer.executors.registry import EXECUTOR_CLASSES


def configurations(regime: str) -> dict[tuple[str, int, int], list[str]]:
    """(finetune, T, K) → the executors of that configuration's interleaved run, one-process runs only."""
    found = {}
    for job, executors in runs(regime):
        if job["resources"]["devices"] == 1:
            algo = job["algorithm"]
            found[(job["model"]["finetune"], algo["sampling_steps"], algo["train_timesteps"])] = executors
    return found


def test_the_compute_bound_regime_benches_k9_full_and_lora_beside_k4() -> None:
    assert {("full", 10, 9), ("lora", 10, 9), ("full", 10, 4)} <= set(configurations("compute"))


def test_the_compute_bound_regime_also_runs_k9_with_one_routed_jagg_group() -> None:
    routed = {
        (job["model"]["finetune"], job["algorithm"]["train_timesteps"])
        for job, _ in runs("compute")
        if job["executor"].get("jagg_frac") == 0.34
    }
    assert routed == {("full", 9), ("lora", 9)}


def test_every_compute_bound_run_interleaves_every_registered_one_process_executor() -> None:
    one_process = set(EXECUTOR_CLASSES) - {"digenrl"}  # digenrl needs a rollout and a trainer process
    for executors in configurations("compute").values():
        assert executors[0] == "native"
        assert set(executors) == one_process


def test_every_registered_executor_is_benched_somewhere() -> None:
    benched = {name for regime in ("overhead", "compute") for _, executors in runs(regime) for name in executors}
    assert benched == set(EXECUTOR_CLASSES)


def report(executors: dict[str, tuple[float, float, float | None]]) -> dict:
    """A bench report of one configuration: name → (speedup, measured/bound, audit cosine)."""
    return {
        "finetune": "full",
        "T": 10,
        "K": 9,
        "world_size": 1,
        "routed_groups": 2,
        "executors": {
            name: {"speedup": speedup, "efficiency": efficiency, "bound": speedup / efficiency, "audit_cosine": cosine}
            for name, (speedup, efficiency, cosine) in executors.items()
        },
    }


def test_the_target_counts_only_executors_whose_audit_cosine_is_at_least_0_99() -> None:
    lines = target_lines(
        [report({"native": (1.0, 1.0, 1.0), "jagg": (1.9, 0.97, 0.95), "jagg_retain": (1.55, 0.96, 0.994)})]
    )
    expected = "full T=10 K=9 R=1 n_J=2: fastest with audit cosine >= 0.99: jagg_retain 1.55x native (cosine 0.9940"
    assert f"{expected}; target >= 1.5x: met)" in lines


def test_an_unaudited_executor_never_counts_toward_the_target() -> None:
    lines = target_lines([report({"native": (1.0, 1.0, 1.0), "jagg_retain": (1.8, 0.96, None)})])
    assert "fastest with audit cosine >= 0.99: native 1.00x native" in lines and "not met" in lines


def test_a_composed_executor_below_0_95_of_its_bound_is_said_to_miss_its_target() -> None:
    lines = target_lines([report({"native": (1.0, 1.0, 1.0), "jagg_reweight": (1.3, 0.90, 0.995)})])
    assert "jagg_reweight: 0.900 of its 1.44x bound (target >= 0.95: not met)" in lines
