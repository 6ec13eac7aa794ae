"""The interactive API docs (/docs: Swagger UI, /redoc: ReDoc), served with no network.

FastAPI's own pages load both from a CDN; these load the same libraries from the npm lockfile
(swagger-ui-dist, redoc's standalone bundle), mounted under /static/vendor by `mount_web`.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

SWAGGER_UI = "/static/vendor/swagger-ui"
REDOC = "/static/vendor/redoc"
FAVICON = f"{SWAGGER_UI}/favicon-32x32.png"

router = APIRouter(include_in_schema=False)


def _openapi_url(request: Request) -> str:
    return request.scope.get("root_path", "") + str(request.app.openapi_url)


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
        swagger_favicon_url=FAVICON,
    )


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    return get_redoc_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{REDOC}/redoc.standalone.js",
        redoc_favicon_url=FAVICON,
        with_google_fonts=False,
    )
