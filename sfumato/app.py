"""The application that is served: the API (server/) with the pages (web/) mounted on it.

`uvicorn --factory sfumato.app:create_app`, or `create_app(settings)` in tests. This is a composition
root: it may import every room, and nothing in server/ or web/ imports it. `import sfumato` does not
import this module, so the client stays free of the server's dependencies.
"""

from __future__ import annotations

from fastapi import FastAPI

from server.config import Settings
from server.main import create_api_app
from web.pages import mount_web


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API, then the page routes and static files on the same application."""
    app = create_api_app(settings)
    mount_web(app)
    return app
