"""The client's model-registry calls (mixed into `Client`): register a job's checkpoint as a model version, list
and show models, set and delete aliases, and resolve a version's download. A version is named as the CLI names
it: `NAME` (its latest version), `NAME:VERSION` or `NAME@ALIAS`.

    version = client.register_model(job.id, "sunset", step=400)
    client.set_model_alias("sunset", "production", version.version)
    print(client.model_version("sunset@production").lineage.training_reward)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from sfumato.errors import SfumatoError
from sfumato.registered_models import ModelAlias, ModelDownload, ModelVersion, RegisteredModel

API = "/api/v1"


def parse_model_ref(ref: str) -> tuple[str, int | None, str | None]:
    """`NAME` → (name, None, None); `NAME:3` → (name, 3, None); `NAME@production` → (name, None, "production")."""
    if "@" in ref:
        name, alias = ref.split("@", 1)
        if name and alias:
            return name, None, alias
    elif ":" in ref:
        name, number = ref.split(":", 1)
        if name and number.isdigit() and int(number) >= 1:
            return name, int(number), None
    elif ref:
        return ref, None, None
    raise SfumatoError(f"{ref!r} names no model version: write NAME, NAME:VERSION (1, 2, ...) or NAME@ALIAS")


def _path(name: str) -> str:
    return f"/models/{quote(name, safe='')}"


class ModelCalls:
    """Needs the Client's transport (`_request`, `_get`, `_post`)."""

    _request: Callable[..., httpx.Response]
    _get: Callable[..., Any]
    _post: Callable[..., Any]

    def register_model(
        self,
        job_id: int,
        name: str,
        *,
        step: int | None = None,
        artifact_id: int | None = None,
        description: str | None = None,
    ) -> ModelVersion:
        """The job's checkpoint at `step` (or `artifact_id`; neither: its latest) as the next version of `name`
        in the job's team."""
        body = {"name": name, "job_id": job_id, "step": step, "artifact_id": artifact_id, "description": description}
        return ModelVersion.model_validate(self._post("/models", json={k: v for k, v in body.items() if v is not None}))

    def models(self, *, team: str | None = None) -> list[RegisteredModel]:
        """The models of the token's teams (or of `team`), by team then name."""
        return [RegisteredModel.model_validate(item) for item in self._get("/models", team=team)["items"]]

    def model(self, name: str, *, team: str | None = None) -> RegisteredModel:
        """A model with its aliases and versions, newest first; `team` where the name is in several of yours."""
        return RegisteredModel.model_validate(self._get(_path(name), team=team))

    def model_version(self, ref: str, *, team: str | None = None) -> ModelVersion:
        """The version `ref` names: `NAME` (the latest), `NAME:VERSION` or `NAME@ALIAS`."""
        name, number, alias = parse_model_ref(ref)
        if number is None:
            model = self.model(name, team=team)
            if alias is not None:
                number = next((a.version for a in model.aliases if a.name == alias), None)
                if number is None:
                    have = ", ".join(a.name for a in model.aliases) or "none"
                    raise SfumatoError(f"model {name!r} has no alias {alias!r}; its aliases: {have}")
            elif model.latest_version is None:
                raise SfumatoError(f"model {name!r} has no version yet")
            else:
                number = model.latest_version
            team = model.team
        return ModelVersion.model_validate(self._get(f"{_path(name)}/versions/{number}", team=team))

    def set_model_alias(self, name: str, alias: str, version: int, *, team: str | None = None) -> ModelAlias:
        """Point `alias` at `version`, making it or moving it (audited on the server)."""
        path = f"{API}{_path(name)}/aliases/{quote(alias, safe='')}"
        params = {"team": team} if team else {}
        response = self._request("PUT", path, json={"version": version}, params=params)
        return ModelAlias.model_validate(response.json())

    def delete_model_alias(self, name: str, alias: str, *, team: str | None = None) -> None:
        path = f"{API}{_path(name)}/aliases/{quote(alias, safe='')}"
        self._request("DELETE", path, params={"team": team} if team else {})

    def model_download(self, ref: str, *, export_format: str | None = None, team: str | None = None) -> ModelDownload:
        """The artifact the version `ref` downloads as: its checkpoint, or its export in `export_format`."""
        version = self.model_version(ref, team=team)
        path = f"{_path(version.model)}/versions/{version.version}/download"
        return ModelDownload.model_validate(self._get(path, team=version.team, format=export_format))
