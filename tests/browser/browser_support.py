"""Types shared by the browser fixtures and tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from page_fixtures import World

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@dataclass
class Live:
    url: str
    world: World
    app: FastAPI


@dataclass
class PageProbe:
    """A page plus the console errors and failed requests seen while it was open."""

    page: object
    errors: list[str]

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]
