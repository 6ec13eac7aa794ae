"""A route whose JSON request body is parsed by orjson: a trainer's 5,000-point metric batch (~150 KB) parses
in a third of the standard library's time, which is most of what ingestion costs before the database."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute


class OrjsonRequest(Request):
    async def json(self) -> Any:
        """The body parsed once. A body orjson refuses goes to the standard library, which also reads the
        NaN and Infinity a trainer may send (skipped, not fatal) and raises FastAPI's JSON 422 otherwise."""
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = orjson.loads(body)
            except orjson.JSONDecodeError:
                self._json = json.loads(body)
        return self._json


class OrjsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(OrjsonRequest(request.scope, request.receive))

        return handle
