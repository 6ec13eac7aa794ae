"""The reward protocol (docs/rewards.md): what a trainer sends a reward server and what it may answer.

JSON both ways; images travel as base64 PNG or WebP files (trainer/rewards/image_codec.py), scores as
plain numbers. Nothing is unpickled or executed on receipt. A contract of the trainer: the remote reward,
the reward server and the platform's health checks share this one definition (torch-free).
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SCORE_PATH = "/v1/score"
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"

MAX_IMAGES = 1024  # per request
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # the server refuses a larger body with 413
MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # the client refuses a larger answer (scores are a few bytes each)
MAX_METADATA_BYTES = 4096  # one image's metadata object, as JSON
MAX_SUB_SCORES = 16
METRIC_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SubScoreName = Annotated[str, Field(pattern=METRIC_NAME.pattern)]  # logged as reward/<name>/<sub>


class ProtocolError(ValueError):
    """A request or response that breaks the protocol; the message says what."""


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    images: list[str] = Field(min_length=1, max_length=MAX_IMAGES, description="base64 PNG or WebP files")
    prompts: list[str] = Field(description="one prompt per image")
    metadata: list[dict[str, Any]] | None = Field(None, description="one JSON object per image, for the reward")


class ScoreResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: list[float]
    sub_scores: dict[SubScoreName, list[float]] = Field(default_factory=dict, max_length=MAX_SUB_SCORES)


def check_request(request: ScoreRequest) -> None:
    """The counts agree and each metadata object is small."""
    count = len(request.images)
    if len(request.prompts) != count:
        raise ProtocolError(f"prompts: {len(request.prompts)} prompts for {count} images")
    if request.metadata is not None:
        if len(request.metadata) != count:
            raise ProtocolError(f"metadata: {len(request.metadata)} objects for {count} images")
        for index, item in enumerate(request.metadata):
            if len(json.dumps(item)) > MAX_METADATA_BYTES:
                raise ProtocolError(f"metadata[{index}]: over {MAX_METADATA_BYTES} bytes")


def parse_response(body: bytes, count: int) -> ScoreResponse:
    """A server's answer to ``count`` images: JSON, one finite score per image, each sub-score list as long."""
    try:
        response = ScoreResponse.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ProtocolError(f"the response is not a score answer ({where}: {first['msg']})") from exc
    lists = {"scores": response.scores, **{f"sub_scores.{k}": v for k, v in response.sub_scores.items()}}
    for field, values in lists.items():
        if len(values) != count:
            raise ProtocolError(f"{field}: {len(values)} values for {count} images")
        if not all(math.isfinite(value) for value in values):
            raise ProtocolError(f"{field}: holds NaN or infinity")
    return response


def served_reward(body: bytes) -> str | None:
    """The reward a server's ``GET /healthz`` answer names (``{"status": "ok", "reward": NAME}``), when NAME can be
    a metric's name (``reward/<NAME>``); None for an answer that names none."""
    try:
        name = json.loads(body).get("reward")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and METRIC_NAME.match(name) else None
