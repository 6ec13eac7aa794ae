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

    def answer_dialogs(self, accept: bool) -> list[str]:
        """Accept (or dismiss) every confirm() the page opens from now on; the list fills with their messages."""
        asked: list[str] = []

        def answer(dialog: object) -> None:
            asked.append(dialog.message)  # type: ignore[attr-defined]
            if accept:
                dialog.accept()  # type: ignore[attr-defined]
            else:
                dialog.dismiss()  # type: ignore[attr-defined]

        self.page.on("dialog", answer)  # type: ignore[attr-defined]
        return asked

    def drag_zoom(self, chart: str) -> None:
        """Drag across the middle of ``chart``'s plot from 20 % to 50 % of its width, as a user zooms in."""
        page = self.page
        page.locator(chart).scroll_into_view_if_needed()  # type: ignore[attr-defined]
        box = page.locator(f"{chart} .u-over").bounding_box()  # type: ignore[attr-defined]
        assert box is not None
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.2, y)  # type: ignore[attr-defined]
        page.mouse.down()  # type: ignore[attr-defined]
        page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)  # type: ignore[attr-defined]
        page.mouse.up()  # type: ignore[attr-defined]

    def toggle_series(self, chart: str, index: int) -> None:
        """Click the legend label of ``chart``'s series ``index`` (0 is the x axis): uPlot listens on the label,
        not on the whole row."""
        self.page.locator(f"{chart} .u-legend .u-series").nth(index).locator(".u-label").click()  # type: ignore[attr-defined]

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]
