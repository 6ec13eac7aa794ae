"""The job spec refuses what the trainer cannot run, naming the field, and never imports torch."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.spec import JobSpec, json_schema, parse_spec, spec_errors, stored_spec


def fields_of(data: dict, **kwargs: object) -> list[str]:
    with pytest.raises(ValueError) as info:
        parse_spec(data, **kwargs)  # type: ignore[arg-type]
    return [e["field"] for e in spec_errors(info.value)]


def test_empty_spec_gets_runnable_defaults() -> None:
    spec = parse_spec({})
    assert spec.model.path == "builtin:tiny"
    assert spec.algorithm.train_timesteps == spec.algorithm.sampling_steps - 1
    assert spec.model.lora_rank == 4 and spec.model.lora_alpha == 8.0


def test_importing_the_spec_does_not_import_torch() -> None:
    code = "import sys, trainer.spec; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"executor": {"name": "warp"}}, "executor.name"),
        ({"algorithm": {"group_size": 1}}, "algorithm.group_size"),
        ({"algorithm": {"total_steps": -3}}, "algorithm.total_steps"),
        ({"algorithm": {"sampling_steps": 10, "train_timesteps": 10}}, "algorithm.train_timesteps"),
        ({"reward": [{"name": "beauty"}]}, "reward.0.name"),
        ({"model": {"path": "/no/such/model"}}, "model.path"),
        ({"model": {"finetune": "full", "lora_rank": 8}}, "model.lora_rank"),
        ({"executor": {"name": "native", "group_width": 2}}, "executor.group_width"),
        ({"algorithm": {"name": "dance_grpo", "sampler": "cps"}}, "algorithm.sampler"),
        ({"algorithm": {"name": "flash_grpo", "sampler": "cps"}}, "algorithm.sampler"),
        ({"algorithm": {"kl_form": "mse"}}, "algorithm.kl_form"),
        ({"reward": [{"name": "pickscore"}]}, "reward.0.path"),
        ({"reward": [{"name": "brightness", "path": "/tmp"}]}, "reward.0.path"),
        ({"reward": [{"name": "remote"}]}, "reward.0.url"),
        ({"reward": [{"name": "remote", "url": "ftp://rewards:21"}]}, "reward.0.url"),
        ({"reward": [{"name": "remote", "url": "http://user:pw@rewards:8000"}]}, "reward.0.url"),
        ({"reward": [{"name": "remote", "url": "http://rewards:8000", "batch_size": 0}]}, "reward.0.batch_size"),
        ({"reward": [{"name": "remote", "url": "http://rewards:8000", "timeout_s": 0}]}, "reward.0.timeout_s"),
        ({"reward": [{"name": "remote", "url": "http://rewards:8000", "path": "/tmp"}]}, "reward.0.path"),
        ({"reward": [{"name": "brightness", "retries": 2}]}, "reward.0.retries"),
        ({"reward": [{"name": "remote", "url": "http://r:1", "outage_window_s": -1}]}, "reward.0.outage_window_s"),
        ({"reward": [{"name": "brightness", "outage_window_s": 60}]}, "reward.0.outage_window_s"),
        ({"reward": [{"name": "brightness"}, {"name": "colorfulness", "url": "http://r:1"}]}, "reward.1.url"),
        ({"prompts": {"source": "builtin:nothing"}}, "prompts.source"),
        ({"resources": {"devices": 0}}, "resources.devices"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_field_is_named(data: dict, field: str) -> None:
    assert field in fields_of(data)


def test_a_remote_reward_gets_its_defaults_and_other_rewards_none() -> None:
    spec = parse_spec({"reward": [{"name": "remote", "url": "http://rewards:8000/"}, {"name": "brightness"}]})
    remote, local = spec.reward
    assert (remote.url, remote.batch_size, remote.timeout_s, remote.retries) == ("http://rewards:8000", 16, 30.0, 3)
    assert remote.outage_window_s == 300.0
    assert (local.url, local.batch_size, local.timeout_s, local.retries, local.outage_window_s) == (None,) * 5


def test_a_remote_reward_stored_before_the_outage_window_existed_still_loads_and_waits_the_default() -> None:
    entry = {"name": "remote", "url": "http://rewards:8000", "batch_size": 16, "timeout_s": 30.0, "retries": 3}
    spec = stored_spec(parse_spec({}).model_dump() | {"reward": [entry]})
    assert spec is not None
    assert (spec.reward[0].retries, spec.reward[0].outage_window_s) == (3, 300.0)


def test_train_timesteps_error_says_what_is_allowed() -> None:
    with pytest.raises(ValueError) as info:
        parse_spec({"algorithm": {"sampling_steps": 6, "train_timesteps": 6}})
    assert "allowed 1..5" in spec_errors(info.value)[0]["message"]


def test_model_path_outside_allowed_roots_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    allowed = tmp_path / "models"
    allowed.mkdir()
    assert fields_of({"model": {"path": str(outside)}}, path_roots=[str(allowed)]) == ["model.path"]
    escaping = str(allowed / ".." / "elsewhere")
    assert fields_of({"model": {"path": escaping}}, path_roots=[str(allowed)]) == ["model.path"]


def test_model_path_inside_allowed_root_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "sd3").mkdir()
    spec = parse_spec({"model": {"path": str(tmp_path / "sd3")}}, path_roots=[str(tmp_path)])
    assert spec.model.path == str(tmp_path / "sd3")


def test_hub_id_is_accepted_without_a_local_directory() -> None:
    assert parse_spec({"model": {"path": "stabilityai/stable-diffusion-3.5-medium"}}).model.path.count("/") == 1


def test_shell_text_in_a_name_is_kept_as_text() -> None:
    assert parse_spec({"name": "x; rm -rf /"}).name == "x; rm -rf /"


def test_json_schema_describes_every_section() -> None:
    schema = json_schema()
    assert set(JobSpec.model_fields) <= set(schema["properties"])


def test_hub_like_name_existing_locally_must_be_inside_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "var" / "artifacts").mkdir(parents=True)
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    assert fields_of({"model": {"path": "var/artifacts"}}, path_roots=[str(tmp_path / "models")]) == ["model.path"]


def test_samples_per_step_that_do_not_divide_over_the_ranks_are_refused() -> None:
    data = {"algorithm": {"prompts_per_step": 1, "group_size": 4}, "resources": {"device_type": "cpu", "devices": 3}}
    with pytest.raises(ValueError) as info:
        parse_spec(data)
    [error] = spec_errors(info.value)
    assert error["field"] == "algorithm.prompts_per_step" and "3 ranks" in error["message"]


def test_dance_grpo_defaults_are_its_upstream_ones() -> None:
    algorithm = parse_spec({"algorithm": {"name": "dance_grpo", "sampling_steps": 16}}).algorithm
    assert algorithm.train_timesteps == 9  # floor(0.6 (T - 1))
    assert (algorithm.global_std, algorithm.unbiased_std, algorithm.advantage_eps) == (False, True, 1e-8)


def test_every_example_spec_validates() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    for path in sorted(examples.glob("*.json")):
        parse_spec(json.loads(path.read_text()), base_dir=str(examples))


def test_every_cross_field_problem_is_reported_at_once_each_naming_its_field() -> None:
    data = {
        "model": {"finetune": "full", "sharding": "fsdp"},  # one device: fsdp shards over several
        "executor": {"name": "lean_reweight"},  # its rules: KL needs the extra VJP
        "algorithm": {"kl_beta": 0.04, "rollout_chunks": 2},  # chunked rollouts are native's
    }
    with pytest.raises(ValueError) as info:
        parse_spec(data)
    errors = {e["field"]: e["message"] for e in spec_errors(info.value)}
    assert sorted(errors) == ["algorithm.kl_beta", "algorithm.rollout_chunks", "model.sharding"]
    assert "one device" in errors["model.sharding"] and "extra_vjp" in errors["algorithm.kl_beta"]


def test_a_section_reports_all_its_own_problems_at_once() -> None:
    data = {"model": {"finetune": "full", "lora_rank": 8, "num_frames": 5}}  # LoRA options on full, wan's on sd3
    assert sorted(fields_of(data)) == ["model.lora_rank", "model.num_frames"]
