"""The client's prompt-set calls (mixed into `Client`): upload a dataset version, list and show datasets, preview
a version and download it. An edit set is uploaded from its jsonl: the images its rows name are read relative to
the jsonl's folder and sent with it.

    version = client.upload_dataset("captions", "text", "train.txt", test="test.txt")
    spec["prompts"]["source"] = version.source  # dataset:captions@1
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import httpx

from sfumato.artifact_download import download_artifact_to
from sfumato.dataset_models import Dataset, DatasetPreview, DatasetVersion
from sfumato.errors import SfumatoError

API = "/api/v1"


def _path(name: str) -> str:
    return f"/datasets/{quote(name, safe='')}"


def edit_images(jsonl: Path) -> list[str]:
    """The image paths an edit set's rows name, each once, in order. Rows are only read here, not checked: the
    server checks every row and refuses a malformed one with its line and column."""
    images: list[str] = []
    for line in jsonl.read_text(encoding="utf-8-sig").splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue
        image = row.get("image") if isinstance(row, dict) else None
        if isinstance(image, str) and image not in images:
            images.append(image)
    return images


class DatasetCalls:
    """Needs the Client's transport (`_request`, `_get`, `_http`)."""

    _request: Callable[..., httpx.Response]
    _get: Callable[..., Any]
    _http: httpx.Client

    def upload_dataset(
        self, name: str, format: str, train: str | Path, *, test: str | Path | None = None, team: str | None = None
    ) -> DatasetVersion:
        """The files as the next version of dataset `name` (made on its first version) in your team: `train`, and
        `test` when given, in `format` (text, geneval, ocr, edit); an edit set's images go with them."""
        splits = {"train": Path(train)} | ({"test": Path(test)} if test is not None else {})
        with ExitStack() as stack:
            files: list[tuple[str, tuple[str, Any]]] = [
                (split, (path.name, stack.enter_context(path.open("rb")))) for split, path in splits.items()
            ]
            if format == "edit":
                sent: set[str] = set()
                for path in splits.values():
                    for image in edit_images(path):
                        if image in sent:
                            continue
                        sent.add(image)
                        if PurePosixPath(image).is_absolute() or ".." in PurePosixPath(image).parts:
                            raise SfumatoError(f"{path}: the image {image!r} is not inside the jsonl's folder")
                        local = path.parent / image
                        if not local.is_file():
                            raise SfumatoError(f"{path}: the image {image!r} is not at {local}")
                        files.append(("images", (image, stack.enter_context(local.open("rb")))))
            params = {"team": team} if team is not None else {}
            response = self._request(
                "POST", f"{API}/datasets", data={"name": name, "format": format}, files=files, params=params
            )
        return DatasetVersion.model_validate(response.json())

    def datasets(self, *, team: str | None = None) -> list[Dataset]:
        """The datasets of the token's teams (or of `team`), by team then name."""
        return [Dataset.model_validate(item) for item in self._get("/datasets", team=team)["items"]]

    def dataset(self, name: str, *, team: str | None = None) -> Dataset:
        """A dataset with its versions, newest first."""
        return Dataset.model_validate(self._get(_path(name), team=team))

    def dataset_preview(self, name: str, version: int, *, team: str | None = None) -> DatasetPreview:
        """The version's first training rows (an edit set's with their images' URLs)."""
        return DatasetPreview.model_validate(self._get(f"{_path(name)}/versions/{version}/preview", team=team))

    def download_dataset(self, name: str, version: int, dest: str | Path, *, team: str | None = None) -> Path:
        """The version's files, unpacked into `dest/<name>@<version>/` after checking their SHA-256."""
        folder = Path(dest)
        query = f"?team={quote(team)}" if team is not None else ""
        path = f"{API}{_path(name)}/versions/{version}/download{query}"
        return download_artifact_to(self._http, path, folder / f".sfumato-{name}@{version}.part", folder, unpack=True)
