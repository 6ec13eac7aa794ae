"""Where the client finds its server and token: arguments, then SFUMATO_URL / SFUMATO_TOKEN, then the
config file `sfumato login` writes ($XDG_CONFIG_HOME or ~/.config, `sfumato/config.toml`, or `config.json`)."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sfumato.errors import ConfigError

URL_ENV = "SFUMATO_URL"
TOKEN_ENV = "SFUMATO_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str | None


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sfumato"


def config_path() -> Path:
    """The TOML file `sfumato login` writes; a `config.json` beside it is read when there is no TOML."""
    return config_dir() / "config.toml"


def read_config() -> dict[str, str]:
    """{url, token} from the config file, or {} when there is none."""
    toml_file, json_file = config_path(), config_dir() / "config.json"
    try:
        if toml_file.exists():
            data = tomllib.loads(toml_file.read_text())
        elif json_file.exists():
            data = json.loads(json_file.read_text())
        else:
            return {}
    except (OSError, ValueError) as exc:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        raise ConfigError(f"cannot read the config file in {config_dir()}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"the config file in {config_dir()} is not a table of settings")
    return {k: str(v) for k, v in data.items() if k in ("url", "token") and v}


def write_config(url: str, token: str) -> Path:
    """Write url and token to config.toml, readable by its owner only (mode 0600)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # JSON string escapes are valid TOML basic-string escapes.
    text = f"url = {json.dumps(url)}\ntoken = {json.dumps(token)}\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    path.chmod(0o600)  # an existing file keeps its old mode through os.open
    return path


def resolve_credentials(url: str | None = None, token: str | None = None) -> Credentials:
    """Each setting from the first of: the argument, the environment, the config file; the URL defaults
    to the embedded platform's address."""
    stored = read_config() if not (url or os.environ.get(URL_ENV)) or not (token or os.environ.get(TOKEN_ENV)) else {}
    resolved_url = url or os.environ.get(URL_ENV) or stored.get("url") or DEFAULT_URL
    resolved_token = token or os.environ.get(TOKEN_ENV) or stored.get("token")
    return Credentials(resolved_url.rstrip("/"), resolved_token)
