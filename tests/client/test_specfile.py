"""Spec files: YAML and JSON, `${ENV}` interpolation, and `--set` overrides checked against the real schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sfumato import SpecFileError
from sfumato.specfile import apply_overrides, interpolate, parse_override, read_spec_file
from trainer.spec import json_schema, parse_spec

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json_schema()


def tiny() -> dict[str, Any]:
    return read_spec_file(REPO / "examples" / "tiny-native.json", {})


def test_environment_variables_and_defaults_are_filled_in_and_double_dollar_stays_literal() -> None:
    text = "a: ${A}\nb: ${B:-7}\nc: ${C:-}\nd: $${A}\n"
    assert interpolate(text, {"A": "x"}) == "a: x\nb: 7\nc: \nd: ${A}\n"


def test_an_unset_variable_names_itself_and_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: run\nalgorithm:\n  group_size: ${GROUP}\n")
    with pytest.raises(SpecFileError, match=r"spec.yaml, line 3: environment variable GROUP is not set"):
        read_spec_file(spec, {})


def test_yaml_values_are_typed_after_interpolation(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_text("algorithm:\n  group_size: ${GROUP}\n  learning_rate: ${LR:-1e-3}\n")
    data = read_spec_file(spec, {"GROUP": "8"})
    assert data == {"algorithm": {"group_size": 8, "learning_rate": "1e-3"}}
    assert parse_spec(data).algorithm.learning_rate == 1e-3


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", "algorithm: {group_size: 8\nname: x\n", r"bad.yaml, line \d+: invalid YAML"),
        ("bad.json", '{"algorithm": {"group_size": 8,}}', r"bad.json, line 1: invalid JSON"),
        ("list.yaml", "- a\n- b\n", r"list.yaml: a spec is a mapping of sections .* not a list"),
        ("empty.yaml", "", r"empty.yaml: .* not an empty file"),
    ],
)
def test_a_file_that_is_not_a_spec_mapping_is_refused_with_its_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecFileError, match=message):
        read_spec_file(path, {})


def test_a_missing_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match=r"cannot read .*nope.yaml: No such file or directory"):
        read_spec_file(tmp_path / "nope.yaml", {})


def test_override_values_are_parsed_as_yaml_scalars() -> None:
    assert parse_override("algorithm.group_size=8") == (["algorithm", "group_size"], 8)
    assert parse_override("model.gradient_checkpointing=true") == (["model", "gradient_checkpointing"], True)
    assert parse_override("algorithm.window_range=[0, 2]") == (["algorithm", "window_range"], [0, 2])
    assert parse_override("name=run 7") == (["name"], "run 7")
    with pytest.raises(SpecFileError, match="expected PATH=VALUE"):
        parse_override("algorithm.group_size")


def test_overrides_reach_nested_fields_list_items_and_absent_sections() -> None:
    spec = apply_overrides(
        tiny(),
        ["algorithm.group_size=8", "reward.0.weight=2.5", "retry.max_attempts=1", "executor.name=lean_retain"],
        SCHEMA,
    )
    parsed = parse_spec(spec)
    assert (parsed.algorithm.group_size, parsed.reward[0].weight) == (8, 2.5)
    assert (parsed.retry.max_attempts, parsed.executor.name) == (1, "lean_retain")
    assert tiny()["algorithm"]["group_size"] == 4, "the original spec is left as it was"


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "algorithm.grup_size=8",
            "algorithm has no field 'grup_size'; fields: adv_clip, awm_weighting, candidate_steps",
        ),
        ("algorithmm.group_size=8", "the spec has no field 'algorithmm'"),
        ("reward.weight=2", "reward is a list; use an index, e.g. reward.0"),
        ("seed.value=1", "seed has no fields"),
        ("reward.3.weight=2", "reward.3 is not in the spec file"),
    ],
)
def test_an_override_path_outside_the_schema_or_the_file_is_refused(assignment: str, message: str) -> None:
    with pytest.raises(SpecFileError, match=f"--set {assignment.split('=')[0]}: {message}"):
        apply_overrides(tiny(), [assignment], SCHEMA)


def test_json_and_yaml_files_of_the_same_spec_read_the_same(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(tiny()))
    (tmp_path / "spec.json").write_text(json.dumps(tiny()))
    assert read_spec_file(tmp_path / "spec.yaml", {}) == read_spec_file(tmp_path / "spec.json", {}) == tiny()


def test_an_override_reaches_an_executor_option_of_any_executor() -> None:
    spec = apply_overrides(tiny(), ["executor.name=jagg", "executor.group_width=4"], SCHEMA)
    assert spec["executor"] == {"name": "jagg", "group_width": 4}
    with pytest.raises(SpecFileError, match="executor has no field 'warp'; fields: "):
        apply_overrides(tiny(), ["executor.warp=1"], SCHEMA)
