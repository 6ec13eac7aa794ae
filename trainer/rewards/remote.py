"""The ``remote`` reward: images scored by a reward server over HTTP (docs/rewards.md).

Large reward models (PickScore, VLM judges) run as servers of their own because the policy's devices have
no room for them. The images go out as 8-bit PNG in requests of ``batch_size``, sent together; each request
has ``timeout_s`` in all (connecting, sending, and reading the answer, so a server that trickles its answer
cannot hold the step), and a failure that a retry may cure is retried ``retries`` times with exponential
backoff. An answer that breaks the protocol is refused at once. Every error names the reward and its URL;
once the retries are spent the step fails with it, never with a made-up score.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import threading

import httpx
import torch

from trainer.rewards.image_codec import encode_png
from trainer.spec import RewardSpec
from trainer.spec.reward_protocol import (
    MAX_RESPONSE_BYTES,
    SCORE_PATH,
    ProtocolError,
    ScoreResponse,
    parse_response,
)

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 8.0
# Node 0 of a job holds the job token, each other node its node token; a token set for the reward wins.
TOKEN_VARIABLES = ("SFUMATO_REWARD_TOKEN", "SFUMATO_JOB_TOKEN", "SFUMATO_NODE_TOKEN")

log = logging.getLogger(__name__)


class RemoteRewardError(RuntimeError):
    """The reward server could not score a batch; the message names the reward and its URL."""


class RetryableFailure(Exception):
    """A failure another try may cure: no connection, a timeout, an overloaded or restarting server."""


def reward_token() -> str | None:
    """The bearer token: SFUMATO_REWARD_TOKEN when set, else the job token (node 0) or the node token (the other
    nodes of a multi-node job) the worker gave this trainer, else none."""
    return next((os.environ[name] for name in TOKEN_VARIABLES if os.environ.get(name)), None)


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
        self.label = f"reward {spec.name!r} at {spec.url}"
        self.endpoint = spec.url + SCORE_PATH
        self.batch_size = spec.batch_size
        self.timeout_s = spec.timeout_s
        self.retries = spec.retries
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

    async def score_batches(self, batches: list[tuple[list[str], list[str]]]) -> list[ScoreResponse]:
        """Every batch at once; the first that fails for good cancels the others."""
        if self.client is None:
            token = reward_token()
            headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
            self.client = httpx.AsyncClient(headers=headers, timeout=None, trust_env=False)
        tasks = [asyncio.ensure_future(self.score_batch(self.client, images, prompts)) for images, prompts in batches]
        try:
            return await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def score_batch(self, client: httpx.AsyncClient, images: list[str], prompts: list[str]) -> ScoreResponse:
        body = httpx.Request("POST", self.endpoint, json={"images": images, "prompts": prompts}).read()
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                async with asyncio.timeout(self.timeout_s):
                    return await self.exchange(client, body, len(images))
            except TimeoutError:
                problem = f"no complete answer within timeout_s={self.timeout_s:g}"
            except httpx.TransportError as exc:
                problem = f"cannot reach it ({type(exc).__name__}: {exc or 'no detail'})"
            except RetryableFailure as exc:
                problem = str(exc)
            if attempt < attempts:
                delay = backoff_seconds(attempt, self.jitter)
                log.warning("%s: try %d/%d failed: %s; again in %.1f s", self.label, attempt, attempts, problem, delay)
                await asyncio.sleep(delay)
        raise RemoteRewardError(f"{self.label}: gave up after {attempts} tries (retries={self.retries}): {problem}")

    async def exchange(self, client: httpx.AsyncClient, body: bytes, count: int) -> ScoreResponse:
        """One request: the answer's scores, or an error (retryable or not)."""
        async with client.stream("POST", self.endpoint, content=body) as response:
            declared = int(response.headers.get("content-length") or 0)
            received = bytearray()
            if declared <= MAX_RESPONSE_BYTES:
                async for chunk in response.aiter_bytes():
                    received += chunk
                    if len(received) > MAX_RESPONSE_BYTES:
                        break
            if max(declared, len(received)) > MAX_RESPONSE_BYTES:
                raise RemoteRewardError(f"{self.label}: refused an answer over {MAX_RESPONSE_BYTES} bytes")
        if response.status_code in RETRYABLE_STATUS:
            raise RetryableFailure(f"answered {response.status_code}: {error_text(bytes(received))}")
        if response.status_code != 200:
            raise RemoteRewardError(f"{self.label}: answered {response.status_code}: {error_text(bytes(received))}")
        try:
            return parse_response(bytes(received), count)
        except ProtocolError as exc:
            raise RemoteRewardError(f"{self.label}: refused its answer to {count} images: {exc}") from exc
