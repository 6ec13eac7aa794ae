"""``make bench``'s configurations (bench/executors.py), checked without a timed run: the compute-bound regime
covers the configurations users run, and every registered executor is benched."""

from __future__ import annotations

from bench.executors import runs
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


def test_every_compute_bound_run_interleaves_every_registered_one_process_executor() -> None:
    one_process = set(EXECUTOR_CLASSES) - {"digenrl"}  # digenrl needs a rollout and a trainer process
    for executors in configurations("compute").values():
        assert executors[0] == "native"
        assert set(executors) == one_process


def test_every_registered_executor_is_benched_somewhere() -> None:
    benched = {name for regime in ("overhead", "compute") for _, executors in runs(regime) for name in executors}
    assert benched == set(EXECUTOR_CLASSES)
