"""Start a reward server: load the reward, bind the socket, announce the URL, serve until stopped.

``--port 0`` picks a free port; the bound URL is printed as ``listening on http://HOST:PORT`` (the platform
and the tests read it), after the reward has loaded and the socket is listening.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import torch
import uvicorn

from trainer.reward_server.app import create_app
from trainer.reward_server.auth import Authenticator
from trainer.reward_server.batch_scorer import BatchScorer
from trainer.reward_server.batcher import DynamicBatcher
from trainer.reward_server.metrics import ServerMetrics
from trainer.reward_server.verified_callers import OUTAGE_WINDOW_S
from trainer.rewards.registry import make_reward
from trainer.spec import REMOTE_REWARD


@dataclass(frozen=True)
class ServerOptions:
    reward: str
    path: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    device: str = "cpu"
    max_batch: int = 32
    max_wait_ms: float = 10.0
    token_env: str = "SFUMATO_REWARD_SERVICE_TOKEN"
    auth_url: str | None = None
    outage_window_s: float = OUTAGE_WINDOW_S


def bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)
    return sock


def bound_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(options: ServerOptions) -> None:
    """Raises ValueError (naming the option) for a reward that cannot be served."""
    if options.reward == REMOTE_REWARD:
        raise ValueError("--reward: a reward server serves a local reward, not 'remote'")
    device = torch.device(options.device)
    scorer = BatchScorer(make_reward(options.reward, options.path, device), device)
    metrics = ServerMetrics()
    batcher = DynamicBatcher(scorer, options.max_batch, options.max_wait_ms / 1000, metrics.batch_size.observe)
    auth = Authenticator(os.environ.get(options.token_env) or None, options.auth_url, options.outage_window_s)
    app = create_app(options.reward, batcher, auth, metrics)
    sock = bind(options.host, options.port)
    print(f"listening on {bound_url(sock)}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])
