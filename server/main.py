"""The REST API as a FastAPI application: its routes, middleware, error handlers and database engine.

The pages are not mounted here: server/ never imports web/. `sfumato.app.create_app` assembles the API
and the pages into the application that is served. Nothing here touches the schema or creates users:
`server.migrate.upgrade` and `server.services.auth.ensure_admin` are called by whoever starts the
platform (the CLI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.datastructures import Default
from sqlalchemy.orm import sessionmaker
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from server.api.admission import AdmissionLimit
from server.api.body_limit import BodySizeLimit
from server.api.errors import install_error_handlers
from server.api.responses import OrjsonResponse
from server.api.router import api_router
from server.api.security_headers import SecurityHeaders
from server.config import Settings, get_settings
from server.db import POOL_OVERFLOW, POOL_SIZE, make_engine
from server.migrate import ensure_sqlite_folder
from server.observability.prometheus import install_prometheus
from server.secret_key import session_secret_key
from server.services.dataset_uploads import DATASET_UPLOAD_PATHS


def create_api_app(settings: Settings | None = None) -> FastAPI:
    """The API with its middleware; the caller may add routes (the pages) before serving it."""
    settings = settings or get_settings()
    settings = settings.model_copy(update={"secret_key": session_secret_key(settings)})
    url = settings.resolved_database_url()
    ensure_sqlite_folder(url)
    engine = make_engine(url)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        engine.dispose()

    app = FastAPI(
        title="Sfumato",
        summary="RL fine-tuning of diffusion models, managed from the web",
        version="0.1.0",
        # /docs and /redoc are served by web.pages.api_docs from the npm lockfile, not from FastAPI's CDN.
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        # Default(...) keeps FastAPI's Pydantic fast path for routes with a response model.
        default_response_class=Default(OrjsonResponse),
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker(bind=engine, expire_on_commit=False)
    # For the hot reads (server.api.deps.in_one_trip): no transaction to begin and roll back, two round
    # trips fewer; each statement reads what is committed when it runs.
    app.state.read_sessionmaker = sessionmaker(
        bind=engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False
    )

    install_error_handlers(app)
    app.add_middleware(AdmissionLimit, limit=POOL_SIZE + POOL_OVERFLOW)  # as many requests as connections
    uploads = {path: settings.max_dataset_bytes for path in DATASET_UPLOAD_PATHS}
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, limits=uploads)
    app.add_middleware(SecurityHeaders, https=settings.public_url.startswith("https://"))
    # Forwarded headers are believed from SFUMATO_TRUSTED_PROXIES only (uvicorn runs with proxy_headers off).
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    install_prometheus(app)  # GET /metrics, and request latencies (outermost middleware)
    app.include_router(api_router)
    return app
