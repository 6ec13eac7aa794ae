"""The reward server's HTTP face: POST /v1/score, GET /healthz, GET /metrics (service token only) (docs/rewards.md).

A request is checked before it costs the reward anything: the token, the body's size and how long it takes
to arrive, the JSON's shape, every image. Errors answer ``{"error": ...}`` with a status that tells the
remote reward whether another try may help (5xx, 408, 429) or not (400, 401, 413).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError

from trainer.reward_server.auth import Authenticator, AuthUnavailable
from trainer.reward_server.batcher import DynamicBatcher
from trainer.reward_server.metrics import ServerMetrics
from trainer.rewards.image_codec import decode_image
from trainer.spec.reward_protocol import (
    HEALTH_PATH,
    MAX_REQUEST_BYTES,
    METRICS_PATH,
    SCORE_PATH,
    ProtocolError,
    ScoreRequest,
    check_request,
)

BODY_TIMEOUT_S = 60.0  # a request body must have arrived whole by then (a client trickling it is cut off)


class Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error(status: int, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise Refusal(413, f"the body is over {MAX_REQUEST_BYTES} bytes")
    body = bytearray()
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_REQUEST_BYTES:
                    raise Refusal(413, f"the body is over {MAX_REQUEST_BYTES} bytes")
    except TimeoutError as exc:
        raise Refusal(408, f"the body did not arrive within {BODY_TIMEOUT_S:g} s") from exc
    return bytes(body)


def parse_request(body: bytes) -> ScoreRequest:
    try:
        request = ScoreRequest.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise Refusal(400, f"{where}: {first['msg']}") from exc
    try:
        check_request(request)
    except ProtocolError as exc:
        raise Refusal(400, str(exc)) from exc
    return request


def create_app(reward_name: str, batcher: DynamicBatcher, auth: Authenticator, metrics: ServerMetrics) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        running = asyncio.create_task(batcher.run())
        yield
        running.cancel()
        batcher.close()

    app = FastAPI(title=f"sfumato reward server: {reward_name}", lifespan=lifespan, openapi_url=None)

    @app.get(HEALTH_PATH)
    async def health() -> dict[str, str]:
        return {"status": "ok", "reward": reward_name}

    @app.get(METRICS_PATH)
    async def prometheus(request: Request) -> Response:
        """Only for the service token when the server asks for tokens at all: the figures are the platform's,
        not its callers'."""
        if auth.required and not auth.is_service(request.headers.get("authorization")):
            return error(401, "the service token is needed (Authorization: Bearer <service token>)")
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post(SCORE_PATH)
    async def score(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await answer(request)
        except Refusal as exc:
            response = error(exc.status, str(exc))
        metrics.requests.inc()
        if response.status_code >= 400:
            metrics.errors.inc()
        metrics.latency.observe(time.perf_counter() - started)
        return response

    async def answer(request: Request) -> Response:
        if auth.required:
            try:
                accepted = await auth.accepts(request.headers.get("authorization"))
            except AuthUnavailable as exc:
                raise Refusal(503, str(exc)) from exc
            if not accepted:
                raise Refusal(401, "a valid bearer token is needed (Authorization: Bearer <token>)")
        parsed = parse_request(await read_body(request))
        try:
            images = await asyncio.to_thread(lambda: [decode_image(d, i) for i, d in enumerate(parsed.images)])
        except ProtocolError as exc:
            raise Refusal(400, str(exc)) from exc
        metadata: list[dict[str, Any]] = parsed.metadata or [{} for _ in images]
        try:
            scored = await batcher.submit(images, parsed.prompts, metadata)
        except Exception as exc:  # the reward itself failed on this batch
            raise Refusal(500, f"reward {reward_name!r} failed: {type(exc).__name__}: {exc}") from exc
        values = {"scores": scored.scores, **{f"sub_scores.{k}": v for k, v in scored.sub_scores.items()}}
        for field, numbers in values.items():
            if not all(math.isfinite(x) for x in numbers):
                raise Refusal(500, f"reward {reward_name!r} gave NaN or infinity in {field}")
        metrics.images.inc(len(images))
        return JSONResponse({"scores": scored.scores, "sub_scores": scored.sub_scores})

    return app
