"""Server-rendered pages (Jinja2 + htmx): one router, plus the static files they load."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from web.pages import auth, compare, gallery, hosts, job_detail, jobs, submit

WEB = Path(__file__).resolve().parent.parent
NODE_MODULES = WEB / "node_modules"
# URL prefix → folder of an npm package's built files (installed by `npm ci`, never committed).
VENDOR = {
    "/static/vendor/htmx": NODE_MODULES / "htmx.org" / "dist",
    "/static/vendor/uplot": NODE_MODULES / "uplot" / "dist",
    "/static/vendor/pico": NODE_MODULES / "@picocss" / "pico" / "css",
}

router = APIRouter(include_in_schema=False)
for module in (auth, jobs, job_detail, gallery, submit, compare, hosts):
    router.include_router(module.router)


def mount_web(app: FastAPI) -> None:
    """Add the page routes and the static mounts (vendor libraries first, so /static does not shadow them)."""
    for prefix, folder in VENDOR.items():
        app.mount(prefix, StaticFiles(directory=folder, check_dir=False), name="vendor-" + prefix.rsplit("/", 1)[-1])
    app.mount("/static", StaticFiles(directory=WEB / "static"), name="static")
    app.include_router(router)
