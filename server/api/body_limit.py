"""Refuse request bodies over settings.max_body_bytes with 413 before they are read into memory; the paths in
`limits` (a dataset upload) have their own limit instead.

A declared Content-Length over the limit is refused at once; a chunked body is counted as it
arrives and refused the moment it passes the limit. The error raised while reading is an
HTTPException, so FastAPI's body parsing passes it through to the JSON error handlers.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.api.responses import OrjsonResponse


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, limits: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.limits = dict(limits or {})

    def _too_large(self, limit: int) -> HTTPException:
        return HTTPException(413, f"request body larger than {limit} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(scope["path"], self.max_bytes)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return

        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._too_large(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except HTTPException as exc:
            if exc.status_code != 413 or started:
                raise
            await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        detail = self._too_large(limit).detail
        response = OrjsonResponse({"detail": detail}, status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)
