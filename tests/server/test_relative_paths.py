"""A relative local path in a spec is resolved once, at submit, against the platform's data root
(SFUMATO_DATA_ROOT, by default the state folder), and the absolute path is what is stored and what the trainer
reads, wherever its run folder is; the server's working directory plays no part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_harness import Harness

from server.config import Settings
from trainer.prompts import load_prompts
from trainer.spec import parse_spec


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


def test_the_default_data_root_is_the_state_folder(tmp_path: Path) -> None:
    assert Settings(home=tmp_path / "home").resolved_data_root() == (tmp_path / "home").resolve()
    assert Settings(home=tmp_path, data_root=tmp_path / "data").resolved_data_root() == (tmp_path / "data").resolve()


def test_a_relative_prompt_file_is_stored_absolute_under_the_data_root(harness: Harness, tmp_path: Path) -> None:
    prompts = harness.settings.home / "models" / "prompts.txt"
    prompts.parent.mkdir(parents=True)
    prompts.write_text("a red apple\na blue ocean\n")
    job_id = harness.submit_ok({"prompts": {"source": "models/prompts.txt"}})
    stored = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()["spec"]
    assert stored["prompts"]["source"] == str(prompts.resolve())
    run_folder = tmp_path / "run"  # the worker writes the spec into the run folder; the trainer reads it there
    run_folder.mkdir()
    (run_folder / "spec.json").write_text(json.dumps(stored))
    spec = parse_spec(json.loads((run_folder / "spec.json").read_text()), base_dir=str(run_folder))
    assert load_prompts(spec.prompts.source) == ["a red apple", "a blue ocean"]


def test_a_relative_path_is_not_looked_up_in_the_server_s_working_directory(harness: Harness) -> None:
    assert Path("examples/tiny-native.json").is_file()  # the tests run from the repository
    response = harness.submit({"prompts": {"source": "examples/tiny-native.json"}})
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "prompts.source"
    assert harness.job_count() == 0
