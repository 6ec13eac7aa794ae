"""Every /api/v1 route, in one router the app includes."""

from fastapi import APIRouter

from server.api.routes import (
    artifacts,
    audit,
    health,
    host_admin,
    hosts,
    ingest,
    jobs,
    logs,
    metrics,
    samples,
    spec,
    teams,
    tokens,
    users,
)

api_router = APIRouter(prefix="/api/v1")
for module in (
    health,
    spec,
    jobs,
    metrics,
    samples,
    logs,
    artifacts,
    hosts,
    host_admin,
    ingest,
    tokens,
    users,
    teams,
    audit,
):
    api_router.include_router(module.router)
