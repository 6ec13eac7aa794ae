"""The real app on a copy of the migrated SQLite template, served for a whole module (and over real HTTP, as a
worker host or a CLI reaches it), and uploading a prompt set through POST /api/v1/datasets as a client does: what
the dataset tests share."""

from __future__ import annotations

import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from fastapi.testclient import TestClient
from platform_harness import free_port
from server_harness import Harness, Headers, bearer

from server.config import Settings
from server.services.auth import ensure_admin
from sfumato.app import create_app


def module_platform(root: Path, sqlite_template: str, **settings: Any) -> Iterator[Harness]:
    """The app with its first admin, its database and artifacts under `root`."""
    shutil.copyfile(sqlite_template, root / "sfumato.db")
    config = Settings(
        home=root / "home",
        database_url=f"sqlite:///{root / 'sfumato.db'}",
        artifact_root=root / "artifacts",
        secret_key=secrets.token_hex(32),
        **settings,
    )
    app = create_app(config)
    with TestClient(app) as client:
        with app.state.sessionmaker() as session:
            token = ensure_admin(session, config)
        assert token is not None
        yield Harness(client, app.state.sessionmaker, config, bearer(token))


def upload(harness: Harness, headers: Headers, name: str, fmt: str, train: bytes, **more: Any) -> Any:
    """POST a dataset version: `test` (bytes) and `images` ({path: bytes}) as the form's other files."""
    files: list[tuple[str, tuple[str, bytes]]] = [("train", ("train.txt", train))]
    if "test" in more:
        files.append(("test", ("test.txt", more.pop("test"))))
    files += [("images", (path, data)) for path, data in more.pop("images", {}).items()]
    return harness.client.post("/api/v1/datasets", data={"name": name, "format": fmt}, files=files, headers=headers)


def uploaded(harness: Harness, headers: Headers, name: str, fmt: str, train: bytes, **more: Any) -> dict[str, Any]:
    response = upload(harness, headers, name, fmt, train, **more)
    assert response.status_code == 201, response.text
    return dict(response.json())


def served(harness: Harness) -> Iterator[str]:
    """The harness's app on a free port over real HTTP, until the generator is closed; yields its URL."""
    port = free_port()
    config = uvicorn.Config(harness.client.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
