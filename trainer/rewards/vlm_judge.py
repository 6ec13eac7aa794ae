"""The ``vlm_judge`` reward: a vision-language model behind an OpenAI-compatible chat endpoint scores each image.

Each image goes to ``POST <url>/v1/chat/completions`` (the API vLLM and SGLang serve) as one user message: the
image as a base64 PNG data URL, then the rubric with ``{prompt}`` filled in; temperature 0. The answer's text
(``choices[0].message.content``) becomes a score by the named parser. Requests run ``batch_size`` at a time, and are
waited for and retried as the remote reward's are (trainer/rewards/remote.py): an endpoint that does not answer is
waited out up to ``outage_window_s``; an error a retry may cure, and an answer that does not parse, are tried
``retries`` more times, after which the step fails with the raw answer quoted. No credential is sent.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable

import httpx
import torch

from trainer.rewards.checked_connections import checked_transport
from trainer.rewards.image_codec import encode_png
from trainer.rewards.remote import RemoteReward, RemoteRewardError, RetryableFailure
from trainer.spec import VLM_JUDGE, RewardSpec

CHAT_PATH = "/v1/chat/completions"
MAX_ANSWER_TOKENS = 256
QUOTED_ANSWER_CHARS = 500
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


class UnparsedAnswer(ValueError):
    """The judge's answer holds no score the parser can read."""


def number_0_10(answer: str) -> float:
    """The answer's first number, which must lie in [0, 10], over 10."""
    found = NUMBER.search(answer)
    if found is None:
        raise UnparsedAnswer("no number in it")
    value = float(found.group())
    if not 0 <= value <= 10:
        raise UnparsedAnswer(f"{value:g} is outside 0..10")
    return value / 10


def yes_no(answer: str) -> float:
    """1 for an answer that starts with yes, 0 for one that starts with no (case and punctuation aside)."""
    words = re.findall(r"[a-z]+", answer.lower())
    if words[:1] == ["yes"]:
        return 1.0
    if words[:1] == ["no"]:
        return 0.0
    raise UnparsedAnswer("it starts with neither yes nor no")


def json_field(field: str) -> Callable[[str], float]:
    """The number at ``field`` of the first JSON object in the answer (a fenced code block is fine)."""

    def parse(answer: str) -> float:
        start, end = answer.find("{"), answer.rfind("}")
        try:
            document = json.loads(answer[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise UnparsedAnswer("no JSON object in it")
        value = document.get(field)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise UnparsedAnswer(f"its {field!r} is not a finite number")
        return float(value)

    return parse


def answer_parser(spec: RewardSpec) -> Callable[[str], float]:
    if spec.parser == "json_field":
        assert spec.score_field is not None
        return json_field(spec.score_field)
    return {"number_0_10": number_0_10, "yes_no": yes_no}[str(spec.parser)]


def answer_text(received: bytes) -> str:
    """``choices[0].message.content`` of a chat completion; anything else breaks the API."""
    try:
        content = json.loads(received)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"not a chat completion ({type(exc).__name__}: {exc})") from None
    if not isinstance(content, str):
        raise ValueError("its message content is not text")
    return content


class VlmJudge(RemoteReward):
    """A reward function ``(images, prompts) -> scores`` that asks the judge about each image."""

    def __init__(self, spec: RewardSpec) -> None:
        super().__init__(spec)
        assert spec.judge_model and spec.rubric and spec.parser
        self.label = f"reward {VLM_JUDGE!r} at {spec.url}"
        self.endpoint = f"{spec.url}{CHAT_PATH}"
        self.model = spec.judge_model
        self.rubric = spec.rubric
        self.parser_name = spec.parser
        self.parse = answer_parser(spec)

    def served_name(self) -> str:
        return VLM_JUDGE

    def connected(self) -> httpx.AsyncClient:
        """One kept-alive client, connecting only where the destination rule allows, with no credential."""
        if self.client is None:
            transport = checked_transport(allow_private=True)
            headers = {"Content-Type": "application/json"}
            self.client = httpx.AsyncClient(headers=headers, timeout=None, trust_env=False, transport=transport)
        return self.client

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:  # type: ignore[override]
        pixels = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        encoded = [encode_png(image) for image in pixels]
        scores = asyncio.run_coroutine_threadsafe(self.judge_all(encoded, prompts), self.loop).result()
        return torch.tensor(scores, dtype=torch.float32, device=images.device)

    async def judge_all(self, images: list[str], prompts: list[str]) -> list[float]:
        """Every image, ``batch_size`` requests at a time; the first that fails for good cancels the others."""
        client = self.connected()
        slots = asyncio.Semaphore(self.batch_size)

        async def judged(image: str, prompt: str) -> float:
            async with slots:
                return await self.tried(lambda: self.ask(client, self.request_body(image, prompt)))

        tasks = [asyncio.ensure_future(judged(image, prompt)) for image, prompt in zip(images, prompts, strict=True)]
        try:
            return await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    def request_body(self, image: str, prompt: str) -> bytes:
        content = [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
            {"type": "text", "text": self.rubric.format(prompt=prompt)},
        ]
        message = {"role": "user", "content": content}
        body = {"model": self.model, "messages": [message], "temperature": 0, "max_tokens": MAX_ANSWER_TOKENS}
        return json.dumps(body).encode()

    async def ask(self, client: httpx.AsyncClient, body: bytes) -> float:
        """One question: the answer's score; an answer that does not parse is a retryable failure quoting it."""
        status, received = await self.read(client.stream("POST", self.endpoint, content=body))
        self.refuse_failures(status, received)
        try:
            answer = answer_text(received)
        except ValueError as exc:
            raise RemoteRewardError(f"{self.label}: refused its answer: {exc}") from None
        try:
            return self.parse(answer)
        except UnparsedAnswer as exc:
            quoted = json.dumps(answer[:QUOTED_ANSWER_CHARS])
            raise RetryableFailure(f"the answer {quoted} does not parse as {self.parser_name}: {exc}") from None
