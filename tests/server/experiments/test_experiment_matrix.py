"""Expanding an experiment's matrix: every combination once, each cell's spec the base spec with its values."""

from __future__ import annotations

import pytest

from server.services.errors import FieldErrors
from server.services.experiment_matrix import Axis, cell_spec, check_axes, expand, group_key, path_exists


def test_the_matrix_expands_into_every_combination_the_first_axis_varying_slowest() -> None:
    cells = expand([Axis("executor.name", ["native", "jagg"]), Axis("seed", [1, 2, 3])])
    assert [c.values for c in cells] == [{"executor.name": e, "seed": s} for e in ("native", "jagg") for s in (1, 2, 3)]
    assert [c.index for c in cells] == list(range(6))
    assert cells[4].label() == "executor.name=jagg, seed=2"


@pytest.mark.parametrize(
    "path",
    ["seed", "algorithm.group_size", "executor.name", "executor.group_width", "reward.0.weight", "resources.devices"],
)
def test_paths_of_the_job_spec_exist(path: str) -> None:
    assert path_exists(path)


@pytest.mark.parametrize(
    "path", ["algorithm.nope", "seeds", "reward.weight", "algorithm.group_size.x", "executor.nope"]
)
def test_paths_the_job_spec_lacks_do_not(path: str) -> None:
    assert not path_exists(path)


def test_an_unknown_axis_path_is_refused_naming_it() -> None:
    with pytest.raises(FieldErrors) as caught:
        check_axes([Axis("seed", [1]), Axis("algorithm.group_sise", [2, 4])], False, 64)
    assert caught.value.detail == [
        {"field": "axes.algorithm.group_sise", "message": "the job spec has no field 'algorithm.group_sise'"}
    ]


def test_more_cells_than_the_limit_are_refused_with_the_count() -> None:
    with pytest.raises(FieldErrors) as caught:
        check_axes([Axis("seed", list(range(13))), Axis("algorithm.group_size", [2, 4, 8])], False, 32)
    assert caught.value.detail[0]["field"] == "axes"
    assert "13 x 3 = 39 cells; at most 32" in caught.value.detail[0]["message"]


def test_fair_timing_refuses_an_axis_over_what_it_sets() -> None:
    with pytest.raises(FieldErrors) as caught:
        check_axes([Axis("resources.exclusive", [True, False])], True, 64)
    assert caught.value.detail[0]["field"] == "axes.resources.exclusive"


def test_a_cell_naming_another_executor_gets_that_executors_defaults_and_then_its_options() -> None:
    base = {"name": "base", "executor": {"name": "lean_retain", "max_retained_graphs": 8}, "seed": 0}
    cells = expand([Axis("executor.name", ["lean_retain", "jagg"]), Axis("executor.group_width", [2])])
    kept, replaced = (cell_spec(base, cell, "exp") for cell in cells)
    assert kept["executor"] == {"name": "lean_retain", "max_retained_graphs": 8, "group_width": 2}
    assert replaced["executor"] == {"name": "jagg", "group_width": 2}
    assert replaced["name"] == "exp/jagg,group_width=2"
    assert base["executor"] == {"name": "lean_retain", "max_retained_graphs": 8}


def test_a_list_entry_is_set_in_place_and_a_missing_section_is_created() -> None:
    base = {"reward": [{"name": "brightness", "weight": 1.0}]}
    cell = expand([Axis("reward.0.weight", [0.5]), Axis("algorithm.group_size", [8])])[0]
    data = cell_spec(base, cell, "exp")
    assert data["reward"] == [{"name": "brightness", "weight": 0.5}]
    assert data["algorithm"] == {"group_size": 8}


def test_cells_that_differ_only_in_seed_share_a_group() -> None:
    one, two, other = (
        {"executor.name": "jagg", "seed": 1},
        {"executor.name": "jagg", "seed": 2},
        {"executor.name": "native", "seed": 1},
    )
    assert group_key(one) == group_key(two) != group_key(other)
