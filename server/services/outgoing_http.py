"""The platform's one way out to addresses that users name: every connection is checked by address.

The host of a URL is resolved when the request is made, every address it resolves to is judged by
trainer.spec.destinations (one refused address refuses the host: a name that answers both a public and a
private address is how DNS rebinding gets in), and the connection goes to the address that was judged, never
to a second lookup. No proxy from the environment, no redirects, no body read.
"""

from __future__ import annotations

import socket
from typing import Any

import httpcore

from trainer.spec.destinations import IPAddress, RefusedDestination, answered_addresses, check_address

# What a call that could not be made raises: refused, unresolved, no connection, no answer, not HTTP.
CALL_FAILURES = (httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError, httpcore.UnsupportedProtocol)


class CheckedBackend(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to addresses the destination rule allows."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = resolved_addresses(host, port)
        try:
            for address in addresses:
                check_address(address, self.allow_private)
        except RefusedDestination as exc:
            raise httpcore.ConnectError(str(exc)) from None
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return super().connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host} has no address")


def resolved_addresses(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to now, in the resolver's order, once each."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise httpcore.ConnectError(f"{host} does not resolve") from exc
    return answered_addresses(answers)


def get_status(url: str, *, allow_private: bool, timeout_s: float) -> int | None:
    """The status code a checked GET of `url` answers, or None when it could not be called at all."""
    timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
    with httpcore.ConnectionPool(network_backend=CheckedBackend(allow_private), retries=0) as pool:
        try:
            with pool.stream("GET", url, extensions={"timeout": timeouts}) as response:
                return int(response.status)
        except CALL_FAILURES:
            return None


def post_body(
    url: str, body: bytes, headers: dict[str, str], *, allow_private: bool, timeout_s: float
) -> tuple[int | None, str | None]:
    """A checked POST of `body`: the status code it answered, or None with the reason it could not be called."""
    timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
    with httpcore.ConnectionPool(network_backend=CheckedBackend(allow_private), retries=0) as pool:
        try:
            with pool.stream(
                "POST", url, headers=list(headers.items()), content=body, extensions={"timeout": timeouts}
            ) as response:
                return int(response.status), None
        except CALL_FAILURES as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300]
