"""Each algorithm's unset numbers take its upstream code's values; a spec stored before keeps what it ran with."""

from __future__ import annotations

import pytest

from trainer.spec import parse_spec, stored_spec


def resolved(name: str, **fields: object) -> dict[str, object]:
    algorithm = parse_spec({"algorithm": {"name": name, **fields}}).algorithm
    return {"noise_level": algorithm.noise_level, "clip_range": algorithm.clip_range,
            "init_same_noise": algorithm.init_same_noise}  # fmt: skip


def test_dance_grpo_samples_at_eta_0_3_from_one_starting_noise_per_group() -> None:
    assert resolved("dance_grpo") == {"noise_level": 0.3, "clip_range": 1e-4, "init_same_noise": True}


def test_flash_grpo_clips_the_ratio_at_1e_3() -> None:
    assert resolved("flash_grpo")["clip_range"] == 1e-3


@pytest.mark.parametrize("name", ["flow_grpo", "flow_grpo_fast"])
def test_flow_grpo_keeps_a_0_7_and_a_clip_of_1e_4_with_a_noise_per_sample(name: str) -> None:
    assert resolved(name) == {"noise_level": 0.7, "clip_range": 1e-4, "init_same_noise": False}


def test_values_the_spec_sets_override_the_upstream_defaults() -> None:
    chosen = {"noise_level": 0.7, "clip_range": 1e-4, "init_same_noise": False}
    assert resolved("dance_grpo", **chosen) == chosen


def test_the_stored_form_records_the_resolved_defaults() -> None:
    """What the server stores at submit (the spec's JSON dump) names every resolved value, so a retry of it
    runs the same numbers whatever the defaults later become."""
    stored = parse_spec({"algorithm": {"name": "dance_grpo"}}).model_dump(mode="json")
    assert {key: stored["algorithm"][key] for key in ("noise_level", "clip_range", "init_same_noise")} == {
        "noise_level": 0.3, "clip_range": 1e-4, "init_same_noise": True,
    }  # fmt: skip


def test_a_spec_stored_before_precision_keeps_its_dtype_and_its_noise_per_sample() -> None:
    """Stored before model.precision and algorithm.init_same_noise: its model names dtype (and Wan's
    height/width, null), its algorithm the η it ran at and no init_same_noise."""
    before = parse_spec({"algorithm": {"name": "dance_grpo", "noise_level": 0.7}}).model_dump(mode="json")
    model = {key: value for key, value in before["model"].items() if key not in ("precision", "resolution")}
    before["model"] = model | {"dtype": "bfloat16", "height": None, "width": None}
    del before["algorithm"]["init_same_noise"]
    spec = stored_spec(before)
    assert spec is not None
    assert (spec.model.precision, spec.model.resolution) == ("bf16", None)
    assert (spec.algorithm.noise_level, spec.algorithm.init_same_noise) == (0.7, False)


def test_a_stored_wan_size_becomes_its_resolution() -> None:
    spec = stored_spec({"model": {"family": "wan", "dtype": "float32", "height": 64, "width": 48}})
    assert spec is not None and spec.model.resolution == (64, 48)
