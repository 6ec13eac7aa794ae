"""The spec-difference table has one convention for cells without a plain value, and says it once."""

from __future__ import annotations

from server.services.compare import DEFINITIONS
from server.services.spec_differences import EMPTY, MISSING, NULL, spec_differences


def differences(*specs: dict[str, object]) -> dict[str, list[str]]:
    return dict(spec_differences(specs))


def test_a_field_one_spec_lacks_reads_as_missing() -> None:
    found = differences({"executor": {"name": "native"}}, {"executor": {"name": "jagg", "window": 2}})
    assert found["executor.window"] == [MISSING, "2"]


def test_a_field_set_to_null_reads_as_null_not_as_a_blank_cell() -> None:
    found = differences({"algorithm": {"train_timesteps": None}}, {"algorithm": {"train_timesteps": 4}})
    assert found["algorithm.train_timesteps"] == [NULL, "4"]


def test_empty_text_and_an_empty_list_read_as_empty_not_as_a_blank_cell() -> None:
    found = differences({"prompts": {"eval": [], "source": ""}}, {"prompts": {"eval": ["a cat"], "source": "x"}})
    assert found["prompts.eval"] == [EMPTY, "a cat"] and found["prompts.source"] == [EMPTY, "x"]


def test_the_compare_answer_defines_every_marker_the_table_uses() -> None:
    assert all(marker in DEFINITIONS.differences for marker in (MISSING, NULL, EMPTY))
