"""For the client, CLI and Prometheus tests: the `sfumato` command in a subprocess, and the two tiny jobs
they all share — one submitted by the Python client, one by `sfumato submit FILE.yaml --set ... --wait`."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from platform_harness import REPO, Platform

from sfumato import Client
from sfumato.specfile import read_spec_file

TINY_STEPS = "3"
# The tiny example as YAML, with its step count from the environment; every step logs a sample.
TINY_YAML = """\
name: tiny-${TINY_EXECUTOR:-native}
model: {family: sd3, path: "builtin:tiny", finetune: lora, lora_rank: 4}
algorithm:
  name: flow_grpo
  sampling_steps: 8
  group_size: 4
  prompts_per_step: 2
  total_steps: ${TINY_STEPS}
  learning_rate: 0.001
executor: {name: native}
reward: [{name: prompt_color_match}]
prompts: {source: "builtin:colors", eval: ["a red apple"]}
resources: {devices: 1, device_type: cpu}
samples: {every: 1, count: 1}
checkpoint: {every: 0}
"""


# Packages only the server side needs: the client and its commands must run without any of them.
SERVER_ONLY = ("sqlalchemy", "fastapi", "starlette", "celery", "kombu", "torch", "pydantic_settings", "uvicorn",
               "alembic", "psycopg", "trainer", "worker", "server", "web")  # fmt: skip


def without_server_dependencies(code: str) -> str:
    """`code` preceded by an import hook that makes every server-only package (server/, web/, worker/,
    trainer/ included) unimportable."""
    return f"""
import sys
from importlib.abc import MetaPathFinder

class RefuseServerModules(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in {SERVER_ONLY!r}:
            raise ImportError(f"{{name}} is a server dependency")
        return None

sys.meta_path.insert(0, RefuseServerModules())
{code}
"""


def cli_env(platform: Platform, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell pointed at `platform`, with its own home (no config file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SFUMATO_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        SFUMATO_URL=platform.url,
        SFUMATO_TOKEN=platform.token,
        COLUMNS="200",
    )
    env.update(extra)
    return env


def sfumato_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "sfumato.cli", *args]


def run_cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(sfumato_argv(*args), env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class TinyJobs:
    native_id: int
    lean_id: int
    spec_file: Path
    cli_submit: subprocess.CompletedProcess[str]


def run_tiny_jobs(platform: Platform, folder: Path) -> TinyJobs:
    """Both jobs at once (the worker has 3 CPU slots): a lean_retain job by the CLI, a native one by the
    client; returns when both have ended."""
    spec_file = folder / "tiny.yaml"
    spec_file.write_text(TINY_YAML)
    env = cli_env(platform, folder, TINY_STEPS=TINY_STEPS, TINY_EXECUTOR="lean_retain")
    argv = sfumato_argv("submit", str(spec_file), "--set", "executor.name=lean_retain", "--wait", "--timeout", "300")
    pipe = subprocess.PIPE
    with (
        subprocess.Popen(argv, env=env, cwd=REPO, stdout=pipe, stderr=pipe, text=True) as proc,
        Client(platform.url, platform.token) as client,
    ):
        native = client.submit(read_spec_file(spec_file, {"TINY_STEPS": TINY_STEPS}))
        client.wait(native.id, timeout=300, interval=0.5)
        stdout, stderr = proc.communicate(timeout=300)
        lean = client.jobs(executor="lean_retain", name="tiny-lean_retain")
    assert len(lean) == 1, f"the CLI job was not submitted:\n{stderr}\n{platform.output()}"
    completed = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    return TinyJobs(native.id, lean[0].id, spec_file, completed)
