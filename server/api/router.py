"""Every /api/v1 route, in one router the app includes."""

from fastapi import APIRouter, Depends

from server.api.routes import (
    advice,
    artifacts,
    audit,
    compare,
    datasets,
    evaluations,
    experiment_curves,
    experiments,
    exports,
    health,
    host_admin,
    hosts,
    ingest,
    jobs,
    logs,
    metrics,
    models,
    playground,
    samples,
    services,
    spec,
    teams,
    tokens,
    users,
    webhooks,
)
from server.api.storable_input import refuse_unstorable_input

# Every route's query values and JSON body are first checked for what the database cannot store (a NUL, an
# integer beyond 64 bits): a 422 naming the field, never a 500 from the database.
api_router = APIRouter(prefix="/api/v1", dependencies=[Depends(refuse_unstorable_input)])
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
    exports,
    playground,
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
    webhooks,
    models,
    evaluations,
    datasets,
):
    api_router.include_router(module.router)
