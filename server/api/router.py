"""Every /api/v1 route, in one router the app includes."""

from fastapi import APIRouter

from server.api.routes import artifacts, health, hosts, ingest, jobs, logs, metrics, samples, spec

api_router = APIRouter(prefix="/api/v1")
for module in (health, spec, jobs, metrics, samples, logs, artifacts, hosts, ingest):
    api_router.include_router(module.router)
