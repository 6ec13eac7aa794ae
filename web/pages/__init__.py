"""Server-rendered pages (Jinja2 + htmx): one router, plus the static files they load."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from server.api.page_session import read_session
from web.pages import (
    account,
    advice,
    api_docs,
    auth,
    compare,
    datasets,
    experiment_form,
    experiments,
    exports,
    gallery,
    hosts,
    job_detail,
    jobs,
    models,
    password_setup,
    playground,
    services,
    side_by_side,
    submit,
    teams,
)
from web.pages.deps import PageNotFound
from web.pages.render import not_found

WEB = Path(__file__).resolve().parent.parent
NODE_MODULES = WEB / "node_modules"
# URL prefix → folder of an npm package's built files (installed by `npm ci`, never committed).
VENDOR = {
    "/static/vendor/htmx": NODE_MODULES / "htmx.org" / "dist",
    "/static/vendor/uplot": NODE_MODULES / "uplot" / "dist",
    "/static/vendor/pico": NODE_MODULES / "@picocss" / "pico" / "css",
    "/static/vendor/swagger-ui": NODE_MODULES / "swagger-ui-dist",
    "/static/vendor/redoc": NODE_MODULES / "redoc" / "bundles",
}

router = APIRouter(include_in_schema=False)
# The new-experiment form before the experiment page: /experiments/new is not an experiment id.
for module in (api_docs, auth, password_setup, jobs, job_detail, side_by_side, gallery, submit, advice, compare,
               playground,
               experiment_form, experiments, hosts, services, account, teams, models, datasets, exports):  # fmt: skip
    router.include_router(module.router)


async def _page_not_found(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, PageNotFound)
    read_session(request)
    return not_found(request, exc.what)


def mount_web(app: FastAPI) -> None:
    """Add the page routes, their 404 page and the static mounts (vendor libraries first, so /static does not
    shadow them)."""
    for prefix, folder in VENDOR.items():
        app.mount(prefix, StaticFiles(directory=folder, check_dir=False), name="vendor-" + prefix.rsplit("/", 1)[-1])
    app.mount("/static", StaticFiles(directory=WEB / "static"), name="static")
    app.include_router(router)
    app.add_exception_handler(PageNotFound, _page_not_found)
