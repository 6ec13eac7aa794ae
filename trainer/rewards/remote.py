"""The ``remote`` reward: images scored by a reward server over HTTP (docs/rewards.md).

Large reward models (PickScore, VLM judges) run as servers of their own because the policy's devices have
no room for them. The images go out as 8-bit PNG in requests of ``batch_size``, sent together; each request
has ``timeout_s`` in all (connecting, sending, and reading the answer, so a server that trickles its answer
cannot hold the step). A server that does not answer (unreachable, timed out, 502/503/504: restarting, or its
caller check cannot reach the platform) is tried again with exponential backoff for up to ``outage_window_s``;
past that the attempt ends as a platform outage (``RewardServerUnreachable``), which the platform retries from
the checkpoint. A server that answers an error a retry may cure (408, 425, 429, 500) is tried ``retries``
more times; an answer that breaks the protocol is refused at once. Every error names the reward and its URL,
and the step fails with it, never with a made-up score. Every connection is checked by address when it is made
(checked_connections): a name that resolves to a link-local or metadata address fails the step at once.

The server says which reward it serves (``GET /healthz``: ``{"status": "ok", "reward": NAME}``), asked once
when the reward is built, waited for in the same way; its scores are then logged as ``reward/<NAME>`` and its
sub-scores as ``reward/<NAME>/<sub>``, as a local reward's are (``remote`` when the server does not say).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

import httpx
import torch

from trainer.platform_outage import PlatformOutage
from trainer.rewards.checked_connections import checked_transport
from trainer.rewards.image_codec import encode_png
from trainer.spec import RewardSpec
from trainer.spec.destinations import RefusedDestination
from trainer.spec.reward_protocol import (
    HEALTH_PATH,
    MAX_RESPONSE_BYTES,
    SCORE_PATH,
    ProtocolError,
    ScoreResponse,
    parse_response,
    served_reward,
)

UNAVAILABLE_STATUS = frozenset({502, 503, 504})  # no answer from the reward itself: waited out like no connection
RETRYABLE_STATUS = frozenset({408, 425, 429, 500})  # the server answered; counted against ``retries``
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 8.0
# The only credential a remote reward sends: under the platform, the reward token the worker gave this node (it
# scores at the job's team's services while the attempt runs, and does nothing else); never the job token.
REWARD_TOKEN_VARIABLE = "SFUMATO_REWARD_TOKEN"
# What a server's scores are logged as when its health answer does not name its reward (another make, a 404).
UNNAMED = "remote"

Answer = TypeVar("Answer")

log = logging.getLogger(__name__)


class RemoteRewardError(RuntimeError):
    """The reward server could not score a batch; the message names the reward and its URL."""


class RewardServerUnreachable(RemoteRewardError, PlatformOutage):
    """The reward server gave no answer for the whole outage window: the platform's fault, not the job's."""


class RetryableFailure(Exception):
    """The server answered an error another try may cure: overloaded, or the reward failed on this batch."""


class ServerUnavailable(Exception):
    """The server answered that it cannot serve now (restarting, its caller check cannot reach the platform)."""


def reward_token() -> str | None:
    """The bearer token: SFUMATO_REWARD_TOKEN when set, else none. The job token (SFUMATO_JOB_TOKEN) writes the
    job's metrics, so it never goes to a URL the spec names."""
    return os.environ.get(REWARD_TOKEN_VARIABLE) or None


def backoff_seconds(attempt: int, jitter: random.Random) -> float:
    """0.5 s, 1 s, 2 s, ... up to 8 s after the ``attempt``-th failure, ±20 % so that trainers sharing a server
    that restarts do not come back in step."""
    return min(BACKOFF_FIRST_S * 2 ** (attempt - 1), BACKOFF_MAX_S) * jitter.uniform(0.8, 1.2)


def error_text(body: bytes) -> str:
    """The server's ``{"error": ...}``, or the start of whatever else it sent."""
    try:
        message = json.loads(body).get("error")
    except (ValueError, AttributeError):
        message = None
    return str(message or body[:200].decode("utf-8", "replace")).strip()


class RemoteReward:
    """A reward function ``(images, prompts) -> (scores, sub-scores)`` that asks a reward server."""

    def __init__(self, spec: RewardSpec) -> None:
        assert spec.url and spec.batch_size and spec.timeout_s is not None and spec.retries is not None
        assert spec.outage_window_s is not None
        self.label = f"reward {spec.name!r} at {spec.url}"
        self.endpoint = spec.url + SCORE_PATH
        self.health_url = spec.url + HEALTH_PATH
        self.batch_size = spec.batch_size
        self.timeout_s = spec.timeout_s
        self.retries = spec.retries
        self.outage_window_s = spec.outage_window_s
        self.sub_score_names: list[str] | None = None  # fixed by the first answer
        self.jitter = random.Random()
        # One event loop of its own, with one kept-alive client: no connection or TLS set-up per call.
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="remote-reward", daemon=True).start()
        self.client: httpx.AsyncClient | None = None

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        pixels = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        encoded = [encode_png(image) for image in pixels]
        starts = range(0, len(encoded), self.batch_size)
        batches = [(encoded[i : i + self.batch_size], prompts[i : i + self.batch_size]) for i in starts]
        answers = asyncio.run_coroutine_threadsafe(self.score_batches(batches), self.loop).result()
        scores = torch.tensor([s for answer in answers for s in answer.scores], dtype=torch.float32)
        names = sorted(answers[0].sub_scores)
        if self.sub_score_names is None:
            self.sub_score_names = names
        for answer in answers:
            if sorted(answer.sub_scores) != self.sub_score_names:
                raise RemoteRewardError(
                    f"{self.label}: sub_scores named {sorted(answer.sub_scores)}, earlier {self.sub_score_names}"
                )
        subs = {name: [s for answer in answers for s in answer.sub_scores[name]] for name in names}
        device = images.device
        return scores.to(device), {name: torch.tensor(values, device=device) for name, values in subs.items()}

    def served_name(self) -> str:
        """The name of the reward the server serves, which its scores are logged under."""
        return asyncio.run_coroutine_threadsafe(self.tried(self.ask_name), self.loop).result()

    def connected(self) -> httpx.AsyncClient:
        if self.client is None:
            token = reward_token()
            headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
            transport = checked_transport(allow_private=True)
            self.client = httpx.AsyncClient(headers=headers, timeout=None, trust_env=False, transport=transport)
        return self.client

    async def score_batches(self, batches: list[tuple[list[str], list[str]]]) -> list[ScoreResponse]:
        """Every batch at once; the first that fails for good cancels the others."""
        client = self.connected()
        tasks = [asyncio.ensure_future(self.score_batch(client, images, prompts)) for images, prompts in batches]
        try:
            return await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def score_batch(self, client: httpx.AsyncClient, images: list[str], prompts: list[str]) -> ScoreResponse:
        body = httpx.Request("POST", self.endpoint, json={"images": images, "prompts": prompts}).read()
        return await self.tried(lambda: self.exchange(client, body, len(images)))

    async def tried(self, request: Callable[[], Awaitable[Answer]]) -> Answer:
        """``request`` tried again while the server does not answer (up to the outage window) and while it
        answers a retryable error (up to ``retries`` times)."""
        tries, answered_errors, first_failure = 0, 0, None
        while True:
            tries += 1
            started = time.monotonic()
            try:
                async with asyncio.timeout(self.timeout_s):
                    return await request()
            except RefusedDestination as exc:
                raise RemoteRewardError(f"{self.label}: not called: {exc}") from None
            except TimeoutError:
                problem, outage = f"no complete answer within timeout_s={self.timeout_s:g}", True
            except httpx.TransportError as exc:
                problem, outage = f"cannot reach it ({type(exc).__name__}: {exc or 'no detail'})", True
            except ServerUnavailable as exc:
                problem, outage = str(exc), True
            except RetryableFailure as exc:
                problem, outage = str(exc), False
                answered_errors += 1
            now = time.monotonic()
            first_failure = first_failure or started
            delay = backoff_seconds(tries, self.jitter)
            if not outage and answered_errors > self.retries:
                raise RemoteRewardError(
                    f"{self.label}: gave up after {tries} tries (retries={self.retries}): {problem}"
                )
            if outage and now - first_failure + delay > self.outage_window_s:
                raise RewardServerUnreachable(
                    f"{self.label}: no answer for {now - first_failure:.0f} s of outage_window_s="
                    f"{self.outage_window_s:g} ({tries} tries): {problem}"
                )
            log.warning("%s: try %d failed: %s; again in %.1f s", self.label, tries, problem, delay)
            await asyncio.sleep(delay)

    async def ask_name(self) -> str:
        """One ``GET /healthz``: the reward it names, or ``remote`` when the server answers without one."""
        status, received = await self.read(self.connected().stream("GET", self.health_url))
        if status in UNAVAILABLE_STATUS:
            raise ServerUnavailable(f"answered {status} to {HEALTH_PATH}: {error_text(received)}")
        if status in RETRYABLE_STATUS:
            raise RetryableFailure(f"answered {status} to {HEALTH_PATH}: {error_text(received)}")
        return (served_reward(received) if status == 200 else None) or UNNAMED

    async def exchange(self, client: httpx.AsyncClient, body: bytes, count: int) -> ScoreResponse:
        """One request: the answer's scores, or an error (retryable or not)."""
        status, received = await self.read(client.stream("POST", self.endpoint, content=body))
        self.refuse_failures(status, received)
        try:
            return parse_response(received, count)
        except ProtocolError as exc:
            raise RemoteRewardError(f"{self.label}: refused its answer to {count} images: {exc}") from exc

    def refuse_failures(self, status: int, received: bytes) -> None:
        """Nothing for a 200; else the error that says whether to wait (unavailable), retry, or fail."""
        if status in UNAVAILABLE_STATUS:
            raise ServerUnavailable(f"answered {status}: {error_text(received)}")
        if status in RETRYABLE_STATUS:
            raise RetryableFailure(f"answered {status}: {error_text(received)}")
        if status != 200:
            raise RemoteRewardError(f"{self.label}: answered {status}: {error_text(received)}")

    async def read(self, exchange: AbstractAsyncContextManager[httpx.Response]) -> tuple[int, bytes]:
        """An answer's status and body; a body over MAX_RESPONSE_BYTES (declared or sent) is refused."""
        async with exchange as response:
            declared = int(response.headers.get("content-length") or 0)
            received = bytearray()
            if declared <= MAX_RESPONSE_BYTES:
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if len(received) > MAX_RESPONSE_BYTES:
                        break
            if max(declared, len(received)) > MAX_RESPONSE_BYTES:
                raise RemoteRewardError(f"{self.label}: refused an answer over {MAX_RESPONSE_BYTES} bytes")
        return response.status_code, bytes(received)
