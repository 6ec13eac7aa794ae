"""At most `limit` requests inside the app at once per server process; the rest wait their turn in the
event loop, holding nothing.

A request takes a database connection at its first query and keeps it across its trips to the thread
pool (each dependency, then the endpoint) until the session closes. With more requests inside than
the pool has connections, threads block on the pool while the requests that hold the connections wait
for a thread: under load the server stalls, CPU idle, until the pool's timeout. Admitting no more
requests than there are connections lets every admitted request finish. A request's slot is freed as
its response starts (its session has closed by then), so a slow download holds none.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class AdmissionLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the slots belong to

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a test client's new loop; a server has one loop all its life
            self._slots, self._loop = asyncio.Semaphore(self.limit), loop
        slots = self._slots
        await slots.acquire()
        held = True

        async def releasing_send(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                slots.release()
            await send(message)

        try:
            await self.app(scope, receive, releasing_send)
        finally:
            if held:
                slots.release()
