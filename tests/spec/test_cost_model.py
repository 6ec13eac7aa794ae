"""The analytical cost model (trainer/spec/cost_model.py): the worked numbers of the executors' cost tables."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer.spec import JaggOptions, parse_spec
from trainer.spec.cost_model import analytical_cost, bound_speedup, native_cost


def spec(executor: str, steps: int, trained: int, finetune: str = "full", **options: object) -> dict:
    return {
        "algorithm": {"name": "dance_grpo", "sampling_steps": steps, "train_timesteps": trained},
        "model": {"finetune": finetune},
        "executor": {"name": executor, **options},
    }


@pytest.mark.parametrize(
    ("steps", "trained", "finetune", "native", "lean", "jagg"),
    [
        (16, 8, "full", 40, 32, 36),  # integer routing: 2 groups, 1 routed → 2 + 4 = 6 backwards
        (16, 8, "lora", 32, 24, 30),
        (20, 4, "full", 32, 28, 28),  # 1 group, routed → 2 backwards
        (20, 4, "lora", 28, 24, 26),
    ],
)
def test_costs_match_the_reference_tables(
    steps: int, trained: int, finetune: str, native: float, lean: float, jagg: float
) -> None:
    assert analytical_cost(parse_spec(spec("native", steps, trained, finetune))) == native
    assert analytical_cost(parse_spec(spec("lean_retain", steps, trained, finetune))) == lean
    assert analytical_cost(parse_spec(spec("lean_reweight", steps, trained, finetune))) == lean
    assert analytical_cost(parse_spec(spec("jagg", steps, trained, finetune))) == jagg
    assert bound_speedup(parse_spec(spec("jagg", steps, trained, finetune))) == pytest.approx(native / jagg)


def test_jagg_routes_round_half_up_full_groups_only() -> None:
    assert JaggOptions().backward_passes(10) == 6  # groups 4, 4, 2: round(1.8) = 2 routed
    assert JaggOptions().backward_passes(9) == 5  # groups 4, 4, 1: 2 routed
    assert JaggOptions().backward_passes(5) == 3  # groups 4, 1: round(1.2) = 1 routed
    assert JaggOptions(jagg_frac=0.0).backward_passes(8) == 8  # nothing routed: native's backwards


def test_gradient_checkpointing_adds_one_backward_and_kl_adds_reference_forwards() -> None:
    data = spec("jagg", 16, 9)
    data["model"]["gradient_checkpointing"] = True  # DanceGRPO check: b = 3, native 16 + 4·9 = 52
    assert native_cost(data) == 52 and analytical_cost(data) == 16 + 9 + 3 * 5
    data = spec("lean_retain", 16, 8)
    data["algorithm"]["kl_beta"] = 0.01
    assert (native_cost(data), analytical_cost(data)) == (40 + 8, 32 + 8)


def test_each_inner_epoch_is_a_native_update_and_the_hybrid_lean_saves_only_the_first() -> None:
    native, hybrid = spec("native", 16, 8), spec("lean_retain", 16, 8, after_first_update="native")
    for data in (native, hybrid):
        data["algorithm"]["inner_epochs"] = 2
    assert native_cost(parse_spec(native)) == 16 + 2 * 3 * 8
    assert analytical_cost(parse_spec(hybrid)) == 16 + 2 * 8 + 3 * 8


def test_stored_spec_whose_model_folder_is_gone_still_has_a_bound() -> None:
    stored = parse_spec(spec("lean_retain", 16, 8)).model_dump(mode="json")
    stored["model"]["path"] = "/nowhere/model"
    assert bound_speedup(stored) == pytest.approx(40 / 32)


def test_digenrl_has_no_bound() -> None:
    stored = parse_spec(spec("native", 16, 8)).model_dump(mode="json")
    stored["executor"] = {"name": "digenrl"}
    assert analytical_cost(stored) is None and bound_speedup(stored) is None


def test_importing_the_cost_model_does_not_import_torch() -> None:
    code = "import sys, trainer.spec.cost_model; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
