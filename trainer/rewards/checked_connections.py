"""Connections of the remote reward, checked by address when they are made.

A reward URL names a host; what that name resolves to on the training host is known only now, and may differ
from what it resolved to when the platform took the spec (DNS rebinding), or be a name that was never checked.
Every address the name resolves to is judged by trainer.spec.destinations before one byte is sent, and the
connection goes to the judged address, never to a second lookup. The trainer judges with private destinations
allowed (a team's reward service is on the platform's own network); link-local, metadata, unspecified and
multicast addresses are refused on every host. TLS still verifies the URL's own name.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from trainer.spec.destinations import IPAddress, answered_addresses, check_address


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's asyncio network backend, connecting only to addresses the destination rule allows.
    A refused address raises trainer.spec.destinations.RefusedDestination (not a connection error: no retry
    can cure it)."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolved_addresses(host, port)
        for address in addresses:
            check_address(address, self.allow_private)
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host} has no address")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("a remote reward connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def resolved_addresses(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to now, in the resolver's order, once each."""
    try:
        answers = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise httpcore.ConnectError(f"{host} does not resolve") from exc
    return answered_addresses(answers)


def checked_transport(allow_private: bool) -> httpx.AsyncHTTPTransport:
    """httpx's own transport (its request and error mapping) over a pool that connects through CheckedBackend.
    No proxy from the environment: a proxy would make the connection, and its address is not the reward's."""
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's defaults
    transport = httpx.AsyncHTTPTransport(trust_env=False, limits=limits)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=CheckedBackend(allow_private),
    )
    return transport
