"""Where the client finds its server and token: arguments, then the environment, then the login file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from client_harness import without_server_dependencies

from sfumato import Client, ConfigError
from sfumato.config import config_path, resolve_credentials, write_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SFUMATO_URL", raising=False)
    monkeypatch.delenv("SFUMATO_TOKEN", raising=False)
    return tmp_path / "config"


def test_the_login_file_is_owner_only_and_is_read_when_nothing_else_is_given(config_home: Path) -> None:
    path = write_config("http://gpu-box:8000/", "sfu_saved")
    assert path == config_home / "sfumato" / "config.toml"
    assert path.stat().st_mode & 0o777 == 0o600
    with Client() as client:
        assert client.url == "http://gpu-box:8000"
    assert resolve_credentials().token == "sfu_saved"


def test_arguments_beat_the_environment_which_beats_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("http://file:1", "sfu_file")
    monkeypatch.setenv("SFUMATO_URL", "http://env:2")
    assert resolve_credentials().url == "http://env:2" and resolve_credentials().token == "sfu_file"
    monkeypatch.setenv("SFUMATO_TOKEN", "sfu_env")
    assert resolve_credentials().token == "sfu_env"
    assert resolve_credentials("http://arg:3", "sfu_arg") == resolve_credentials("http://arg:3/", "sfu_arg")
    assert resolve_credentials("http://arg:3", "sfu_arg").token == "sfu_arg"


def test_a_json_config_file_is_read_when_there_is_no_toml(config_home: Path) -> None:
    (config_home / "sfumato").mkdir(parents=True)
    (config_home / "sfumato" / "config.json").write_text(json.dumps({"url": "http://j:4", "token": "sfu_json"}))
    assert resolve_credentials().url == "http://j:4" and resolve_credentials().token == "sfu_json"


def test_no_token_anywhere_is_a_config_error_that_says_how_to_log_in() -> None:
    with pytest.raises(ConfigError, match=r"no API token: .*sfumato login"):
        Client("http://127.0.0.1:8000")


def test_a_broken_config_file_is_a_config_error_naming_it() -> None:
    config_path().parent.mkdir(parents=True)
    config_path().write_text("url = \n")
    with pytest.raises(ConfigError, match="cannot read the config file"):
        Client()


def test_the_client_imports_without_the_server_dependencies() -> None:
    """With every server-side package made unimportable, the client still imports and builds a Client."""
    code = """
import sfumato, sfumato.client, sfumato.export, sfumato.specfile
sfumato.Client("http://127.0.0.1:1", "sfu_x").close()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("server", "sqlalchemy", "torch")))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SFUMATO_")}
    argv = [sys.executable, "-c", without_server_dependencies(code)]
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
