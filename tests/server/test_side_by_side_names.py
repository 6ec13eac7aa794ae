"""Run side by side names each job after its source with the executor's word swapped, so names stay readable."""

from __future__ import annotations

from server.services.side_by_side import side_by_side_name, side_by_side_spec


def test_an_experiment_cell_s_executor_is_replaced_in_place() -> None:
    assert side_by_side_name("sweep/native,seed=1", "native", "jagg") == "sweep/jagg,seed=1"


def test_only_the_whole_executor_word_is_replaced() -> None:
    assert side_by_side_name("native-vs-natively/native", "native", "lean_retain") == "native-vs-natively/lean_retain"
    assert side_by_side_name("run-lean_retain_v2", "lean_retain", "jagg") == "run-lean_retain_v2 · jagg"


def test_a_name_without_its_executor_gets_the_executor_appended() -> None:
    assert side_by_side_name("sd3-brightness", "native", "jagg") == "sd3-brightness · jagg"


def test_a_long_name_stays_within_the_spec_s_200_characters() -> None:
    name = side_by_side_name("x" * 200, "native", "lean_reweight")
    assert len(name) == 200 and name.endswith(" · lean_reweight")


def test_the_side_by_side_spec_is_named_after_its_source_and_holds_its_host() -> None:
    spec = side_by_side_spec({"name": "sweep/native,seed=2", "executor": {"name": "native"}}, "lean_retain")
    assert spec["name"] == "sweep/lean_retain,seed=2"
    assert spec["executor"] == {"name": "lean_retain"} and spec["resources"]["exclusive"] is True


def test_jagg_and_its_compositions_side_by_side_keep_the_source_s_routing() -> None:
    source = {"name": "run", "executor": {"name": "jagg", "group_width": 2, "jagg_frac": 1.0}}
    assert side_by_side_spec(source, "jagg_retain")["executor"] == {
        "name": "jagg_retain",
        "group_width": 2,
        "jagg_frac": 1.0,
    }
    assert side_by_side_spec(source, "native")["executor"] == {"name": "native"}
