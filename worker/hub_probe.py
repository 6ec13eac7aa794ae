"""Whether this worker's trainers could download a model from the hub: one TCP connection to the hub's endpoint
when the host registers. A host that cannot reach it is recorded like one that runs with the hub off, so a spec
naming a hub model is warned about at submit instead of failing on the worker.

The endpoint is the one huggingface_hub downloads from (huggingface_hub/constants.py: ``HF_ENDPOINT``, else
https://huggingface.co). Nothing is sent over the connection: opening it is the whole probe.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 3.0  # for the name lookup and the connection together


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_unreachable() -> str | None:
    """Why the hub's endpoint cannot be reached from here ("no network: cannot connect to huggingface.co:443:
    [Errno -2] Name or service not known"), or None when a connection opens within the timeout."""
    endpoint = urlsplit(hub_endpoint())
    host = endpoint.hostname or ""
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"{type(exc).__name__}: {exc}")

    # The name lookup ignores the socket's timeout, so the probe waits on a thread of its own.
    probe = threading.Thread(target=connect, name="hub-probe", daemon=True)
    probe.start()
    probe.join(PROBE_TIMEOUT_S)
    if not outcome:
        return f"no network: no connection to {host}:{port} within {PROBE_TIMEOUT_S:g} s"
    failure = outcome[0]
    return None if failure is None else f"no network: cannot connect to {host}:{port}: {failure}"
