"""Where the platform may send a request: the one rule for reward URLs and every URL the platform calls.

Always refused: link-local (169.254/16, fe80::/10, cloud metadata among them), unspecified (0.0.0.0/8, ::),
multicast, broadcast, reserved and the known cloud-metadata addresses. Refused unless private destinations are
allowed (SFUMATO_ALLOW_PRIVATE_URLS, on only for the embedded platform): loopback, private and shared ranges
(127/8, ::1, 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10) and every other address that is not global.

A host is read as the resolver reads it: `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` are 127.0.0.1 to
`inet_aton`, and an IPv6 address that carries an IPv4 one (mapped, compatible, 6to4, NAT64) is judged by the
IPv4 address as well. A name is judged here only when it means this machine (`localhost`); the names a resolver
answers are judged again, address by address, when the request is made.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Metadata services that are not link-local: Alibaba's, AWS's IPv6 one, Azure's wire server.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "100.100.100.200", "fd00:ec2::254", "168.63.129.16")
)
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data"})
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
BROADCAST = ipaddress.ip_address("255.255.255.255")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

PRIVATE_URLS_SETTING = "SFUMATO_ALLOW_PRIVATE_URLS"


class RefusedDestination(ValueError):
    """A destination the platform never calls, or calls only where private destinations are allowed."""


def host_address(host: str) -> IPAddress | None:
    """The address a numeric host names in any form a resolver accepts; None for a name."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except OSError:
        return None


def answered_addresses(answers: Iterable[tuple[Any, ...]]) -> list[IPAddress]:
    """The addresses of `socket.getaddrinfo`'s answers, in the resolver's order, once each (a zone id dropped)."""
    addresses: list[IPAddress] = []
    for *_, sockaddr in answers:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def check_address(address: IPAddress, allow_private: bool) -> None:
    """Raise RefusedDestination naming why `address` may not be called."""
    carried = _embedded_ipv4(address)
    if carried:  # judged by the IPv4 addresses it reaches (IPv6's ::/8 is "reserved" as a whole)
        for ipv4 in carried:
            check_address(ipv4, allow_private)
        return
    if address in METADATA_ADDRESSES:
        raise RefusedDestination(f"{address} is a cloud metadata address, never called")
    if address.is_link_local:
        raise RefusedDestination(f"{address} is link-local, never called")
    if address.is_unspecified or address in THIS_NETWORK:
        raise RefusedDestination(f"{address} is an unspecified address, never called")
    if address.is_multicast or address == BROADCAST:
        raise RefusedDestination(f"{address} is a multicast or broadcast address, never called")
    if address.is_reserved and not address.is_loopback:
        raise RefusedDestination(f"{address} is a reserved address, never called")
    if not allow_private and not address.is_global:
        raise RefusedDestination(
            f"{address} is a loopback or private address, called only where {PRIVATE_URLS_SETTING} is on"
        )


def check_host(host: str, allow_private: bool) -> None:
    """The rule for a URL's host as written: numeric forms by their address, this machine's names as loopback,
    metadata names always refused. Other names pass here and are checked by address when called."""
    name = host.rstrip(".").lower()
    if name in METADATA_NAMES:
        raise RefusedDestination(f"{host} is a cloud metadata name, never called")
    address = host_address(name)
    if address is not None:
        check_address(address, allow_private)
    elif not allow_private and (name == "localhost" or name.endswith(".localhost")):
        raise RefusedDestination(f"{host} is this machine, called only where {PRIVATE_URLS_SETTING} is on")


def _embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address reaches: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), 6to4, NAT64
    and Teredo's client."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    carried = [address.ipv4_mapped, address.sixtofour, address.teredo[1] if address.teredo else None]
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [a for a in carried if a is not None]
