"""Every /api/v1 route, in one router the app includes."""

from fastapi import APIRouter

from server.api.routes import (
    advice,
    artifacts,
    audit,
    compare,
    experiment_curves,
    experiments,
    health,
    host_admin,
    hosts,
    ingest,
    jobs,
    logs,
    metrics,
    samples,
    services,
    spec,
    teams,
    tokens,
    users,
)

api_router = APIRouter(prefix="/api/v1")
# Routes are matched in order, a few microseconds each: the trainers' ingestion and the jobs list, the calls
# made most, come first.
for module in (
    ingest,
    jobs,
    health,
    spec,
    metrics,
    samples,
    logs,
    artifacts,
    hosts,
    host_admin,
    tokens,
    users,
    teams,
    audit,
    compare,
    experiments,
    experiment_curves,
    services,
    advice,
):
    api_router.include_router(module.router)
