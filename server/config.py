"""Settings for every platform process, read from SFUMATO_* environment variables.

The defaults are the embedded platform (`make run`): SQLite, a broker on SQLite, artifacts on
the local disk. Production only changes URLs.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SFUMATO_", env_file=".env", extra="ignore")

    home: Path = Field(Path("var"), description="state folder of the embedded platform")
    database_url: str = ""
    broker_url: str = ""
    public_url: str = "http://127.0.0.1:8000"
    artifact_root: Path | None = None
    # Where uploaded artifacts are kept: unset, `<artifact root>/store`; `s3://bucket/prefix`, an S3-compatible
    # bucket, with boto3's own settings (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION,
    # AWS_ENDPOINT_URL_S3 for a server other than AWS). docs/artifacts.md.
    artifact_store: str = Field("", pattern=r"^(s3://[a-z0-9][a-z0-9.-]{1,62}(/[^/].*)?)?$")
    admin_token: str | None = None
    admin_password: str | None = None
    secret_key: str = ""

    # Folders a spec's local paths (model, reward weights, prompt files) must lie in; unset: see resolved_path_roots.
    # SFUMATO_PATH_ROOTS is a JSON list or paths separated by commas.
    path_roots: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Addresses (or networks) of the reverse proxies whose X-Forwarded-For / -Proto are believed; nobody else's
    # are (the login limit counts per client address). A JSON list or comma-separated, like the path roots.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)

    worker_hostname: str | None = None
    worker_cpu_slots: int = 2
    heartbeat_seconds: float = 5.0
    host_lost_after_seconds: float = 30.0
    scheduler_interval_seconds: float = 1.0
    # A job placed this long ago whose trainer never started goes back to the queue (its task was lost).
    scheduled_timeout_seconds: float = 300.0
    # The interpreter that runs torchrun on a worker (a host may keep the trainer in its own venv).
    trainer_python: str | None = None
    cancel_grace_seconds: float = 10.0
    # How long a reward server may keep the caller check's yes (Cache-Control: max-age): an ended job or a
    # revoked token scores for at most this long afterwards.
    caller_trust_seconds: int = Field(10, ge=0, le=60)

    max_body_bytes: int = 32 * 1024 * 1024
    # A prompt-set upload (POST /api/v1/datasets, the /datasets form): its whole body, counted as it arrives
    # (413 beyond); a version's files and images travel in that one request (docs/datasets.md).
    max_dataset_bytes: int = Field(512 * 1024 * 1024, ge=1024)
    # A job spec as JSON; a 24 MB spec once made a 45 MB job page.
    max_spec_bytes: int = 256 * 1024
    # Queued jobs at once, per submitting user and per team (429 beyond, naming the limit).
    max_queued_per_user: int = 100
    max_queued_per_team: int = 500
    max_metric_points: int = 100_000
    # Cells (jobs) one experiment may expand into (422 beyond).
    max_experiment_cells: int = 64
    # Whether a submitted remote reward's URL is probed (GET /healthz, by the scheduler process, after the job is
    # stored) for the job's reachable/unreachable answer; off where the platform must not call what users name.
    remote_reward_probe: bool = True
    # Whether reward URLs (and every URL the platform calls) may name loopback or private addresses. Off by
    # default; `sfumato up` (the embedded platform) turns it on. trainer/spec/destinations.py has the rule.
    allow_private_urls: bool = False
    # The folder a spec's relative local paths (prompts.source, model.path, reward paths) are resolved against at
    # submit; unset: the state folder (home). The absolute path is what is stored and what the trainer reads.
    data_root: Path | None = None
    max_image_bytes: int = 8 * 1024 * 1024
    max_image_pixels: int = 4096 * 4096
    # An evaluation's uploaded prompt file (422 beyond, naming the line): its bytes and its prompts, which the eval
    # task carries in the job's row (docs/evaluation.md).
    max_eval_prompt_bytes: int = Field(256 * 1024, ge=1)
    max_eval_prompts: int = Field(2048, ge=1, le=4096)
    # The reward-hacking alarm (docs/evaluation.md): N consecutive evaluations over which the training reward keeps
    # rising while a held-out reward falls by more than this many reward units.
    reward_hacking_evaluations: int = Field(3, ge=2, le=100)
    reward_hacking_min_drop: float = Field(0.02, ge=0.0)

    @field_validator("path_roots", "trusted_proxies", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else [p.strip() for p in text.split(",") if p.strip()]
        return value

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.home / 'sfumato.db').resolve()}"

    def resolved_broker_url(self) -> str:
        return self.broker_url or f"sqla+sqlite:///{(self.home / 'broker.db').resolve()}"

    def resolved_artifact_root(self) -> Path:
        return (self.artifact_root or self.home / "artifacts").resolve()

    def resolved_data_root(self) -> Path:
        return (self.data_root or self.home).resolve()

    def resolved_path_roots(self) -> list[str]:
        """SFUMATO_PATH_ROOTS, or by default `<home>/models`, plus the repository's examples/ on the embedded
        (SQLite) platform. Never "anywhere": the state folder itself (database, other jobs' files) is outside."""
        if self.path_roots:
            return list(self.path_roots)
        roots = [str((self.home / "models").resolve())]
        if self.resolved_database_url().startswith("sqlite"):
            roots.append(str(Path(__file__).resolve().parents[1] / "examples"))
        return roots


@lru_cache
def get_settings() -> Settings:
    return Settings()
