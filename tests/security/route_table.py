"""Every route of the assembled application (sfumato.app.create_app: the API and the pages), read from its route
table, so that a check built on it covers a new route the day the route is added."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.routing import Mount, Route

from server.config import Settings
from sfumato.app import create_app


@dataclass(frozen=True, order=True)
class AppRoute:
    """One method of one path; a static mount is the method MOUNT (it serves files under its path)."""

    method: str
    path: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def params(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)

    @property
    def is_page(self) -> bool:
        return not self.path.startswith("/api/")


def routes_of(app: FastAPI) -> list[AppRoute]:
    """The app's routes, into the routers FastAPI keeps as lazy wrappers (HEAD, which GET answers, left out)."""
    found: list[AppRoute] = []

    def walk(routes: list[Any], prefix: str) -> None:
        for route in routes:
            if hasattr(route, "original_router"):
                walk(route.original_router.routes, prefix + route.include_context.prefix)
            elif isinstance(route, Mount):
                found.append(AppRoute("MOUNT", prefix + route.path))
            elif isinstance(route, Route):
                found.extend(AppRoute(m, prefix + route.path) for m in sorted(route.methods or ()) if m != "HEAD")

    walk(app.routes, "")
    return sorted(found)


def assembled_routes() -> list[AppRoute]:
    """The routes of the app as it is served, built on a throwaway home (no request is made)."""
    with tempfile.TemporaryDirectory() as home:
        return routes_of(create_app(Settings(home=Path(home), database_url=f"sqlite:///{home}/routes.db")))
