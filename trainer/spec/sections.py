"""The spec's smaller sections: rewards, prompts, resources (with DigenRL's pools), samples, checkpoints, retries."""

from __future__ import annotations

import unicodedata
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from trainer.spec.base import (
    BUILTIN_PROMPT_SOURCES,
    MODEL_REWARDS,
    PIXEL_REWARDS,
    REMOTE_REWARD,
    SERVICE_REWARD,
    Section,
    SpecError,
    SpecProblems,
    allows_private_urls,
    check_local_path,
    is_stored,
    known_rewards,
)
from trainer.spec.byte_size import parse_byte_size
from trainer.spec.dataset_source import is_dataset_source, parse_dataset_source
from trainer.spec.destinations import RefusedDestination, check_host
from trainer.spec.geneval_options import DEFAULT_SCORE_THRESHOLD, GENEVAL, GENEVAL_OPTIONS
from trainer.spec.judge_options import (
    DEFAULT_PARSER,
    DEFAULT_RUBRIC,
    JUDGE_OPTIONS,
    VLM_JUDGE,
    JudgeParser,
    check_rubric,
)

REMOTE_OPTIONS = ("url", "batch_size", "timeout_s", "retries", "outage_window_s")
# 300 s outlasts a reward service's worst restart by its supervisor (15 missed health checks of up to 3 s each,
# a 30 s back-off, then the model's load) and an API restart; docs/rewards.md gives the reckoning.
REMOTE_DEFAULTS = {"batch_size": 16, "timeout_s": 30.0, "retries": 3, "outage_window_s": 300.0}


class RewardSpec(Section):
    name: str = Field(
        description="a built-in reward, 'remote' (a reward server at `url`), or one registered under the "
        "'sfumato.rewards' entry point"
    )
    weight: float = 1.0
    path: str | None = Field(None, description="local weights directory (model-based rewards)")
    url: str | None = Field(
        None,
        max_length=2048,
        description="remote: the reward server's base URL, http(s)://host:port (docs/rewards.md); loopback and "
        "private hosts only where the platform allows them (docs/security.md)",
    )
    batch_size: int | None = Field(
        None, ge=1, le=1024, description=f"remote: images per request (default {REMOTE_DEFAULTS['batch_size']})"
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description=f"remote: seconds a request may take in all, reading included (default "
        f"{REMOTE_DEFAULTS['timeout_s']:g})",
    )
    retries: int | None = Field(
        None,
        ge=0,
        le=20,
        description=f"remote: further tries of a request the server answered with an error a retry may cure "
        f"(408, 425, 429, 500), with exponential backoff (default {REMOTE_DEFAULTS['retries']})",
    )
    outage_window_s: float | None = Field(
        None,
        ge=0,
        le=86400,
        description=f"remote: seconds the trainer keeps trying a server that does not answer (unreachable, timed "
        f"out, 502/503/504) before the attempt ends as a platform outage and is retried from its checkpoint "
        f"(default {REMOTE_DEFAULTS['outage_window_s']:g})",
    )
    service: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="service: the name of a reward service of the job's team (POST /api/v1/services); the "
        "platform scores through it as a remote reward at the service's URL",
    )
    judge_model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="vlm_judge: the model the OpenAI-compatible endpoint at `url` serves (the request's `model`)",
    )
    rubric: str | None = Field(
        None,
        min_length=1,
        max_length=8000,
        description="vlm_judge: the question asked with each image; {prompt} stands for the sample's prompt "
        "(default: a 0-10 rating of how well the image matches the prompt)",
    )
    parser: JudgeParser | None = Field(
        None,
        description=f"vlm_judge: how the answer becomes a score: number_0_10 (its first number, 0-10, over 10), "
        f"yes_no (1 for yes, 0 for no), json_field (the number at `score_field` of a JSON object) (default "
        f"{DEFAULT_PARSER})",
    )
    score_field: str | None = Field(
        None, min_length=1, max_length=100, description="vlm_judge with parser json_field: the key of the score"
    )
    score_threshold: float | None = Field(
        None,
        gt=0,
        lt=1,
        description=f"geneval with a detector `path`: the detector's score an object needs (default "
        f"{DEFAULT_SCORE_THRESHOLD}, GenEval's; prompts tagged counting need 0.9)",
    )
    clip_path: str | None = Field(
        None, description="geneval with a detector `path`: the local CLIP directory that names each object's colour"
    )

    @field_validator("name")
    @classmethod
    def _known(cls, value: str, info: ValidationInfo) -> str:
        if is_stored(info):
            return value
        known = known_rewards()
        if value not in known:
            raise ValueError(f"unknown reward {value!r}; allowed: {', '.join(sorted(known))}")
        return value

    @field_validator("path")
    @classmethod
    def _path_exists(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_local_path(value, "reward path", info)

    @field_validator("clip_path")
    @classmethod
    def _clip_path_exists(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_local_path(value, "CLIP path", info)

    @field_validator("rubric")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        return None if value is None else check_rubric(value)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_reward_url(value, allows_private_urls(info))

    @model_validator(mode="after")
    def _options_fit_the_reward(self) -> RewardSpec:
        problems = SpecProblems("RewardSpec")
        if self.name in MODEL_REWARDS and self.path is None:
            problems.add("path", f"reward {self.name!r} loads a model: give the local directory of its weights")
        if self.name in PIXEL_REWARDS and self.name != GENEVAL and self.path is not None:
            problems.add("path", f"reward {self.name!r} computes from pixels and takes no path")
        if self.name == GENEVAL:
            self._geneval_problems(problems)
        else:
            for field in GENEVAL_OPTIONS:
                if getattr(self, field) is not None:
                    problems.add(field, f"only the {GENEVAL!r} reward takes {field}, not {self.name!r}")
        if self.name == REMOTE_REWARD:
            if self.url is None:
                problems.add("url", "the remote reward needs the reward server's URL, e.g. http://host:8000")
            if self.path is not None:
                problems.add("path", "the reward server loads the weights; the remote reward takes only its url")
            for field, default in REMOTE_DEFAULTS.items():
                if getattr(self, field) is None:
                    setattr(self, field, default)
        elif self.name == VLM_JUDGE:
            self._judge_problems(problems)
        elif self.name == SERVICE_REWARD:
            if self.service is None:
                problems.add("service", "the service reward names a reward service of your team, e.g. 'pickscore-a'")
            if self.path is not None:
                problems.add("path", "the reward service loads the weights; the service reward takes only its name")
            if self.url is not None:
                problems.add("url", "the platform gives the service's URL; name the service only")
        else:
            for field in REMOTE_OPTIONS:
                if getattr(self, field) is not None:
                    problems.add(field, f"only the {REMOTE_REWARD!r} reward takes {field}, not {self.name!r}")
        if self.name != SERVICE_REWARD and self.service is not None:
            problems.add("service", f"only the {SERVICE_REWARD!r} reward takes service, not {self.name!r}")
        for field in JUDGE_OPTIONS:
            if self.name != VLM_JUDGE and getattr(self, field) is not None:
                problems.add(field, f"only the {VLM_JUDGE!r} reward takes {field}, not {self.name!r}")
        problems.raise_all()
        return self

    def _geneval_problems(self, problems: SpecProblems) -> None:
        """A detector ``path`` needs the CLIP that names colours; without it the shape detector takes no options."""
        if self.path is not None:
            if self.clip_path is None:
                problems.add("clip_path", "geneval with a detector path names colours with CLIP: give its directory")
            if self.score_threshold is None:
                self.score_threshold = DEFAULT_SCORE_THRESHOLD
            return
        for field in GENEVAL_OPTIONS:
            if getattr(self, field) is not None:
                problems.add(field, "applies to geneval with a detector `path` (the shape detector takes none)")

    def _judge_problems(self, problems: SpecProblems) -> None:
        """The judge's endpoint and model are needed; the remote options and the rubric and parser default."""
        if self.url is None:
            problems.add("url", "the vlm_judge reward needs its endpoint's base URL, e.g. http://host:8000")
        if self.judge_model is None:
            problems.add("judge_model", "name the model the endpoint serves, e.g. 'Qwen/Qwen2.5-VL-7B-Instruct'")
        if self.path is not None:
            problems.add("path", "the endpoint loads the judge; the vlm_judge reward takes its url")
        for field, default in {**REMOTE_DEFAULTS, "rubric": DEFAULT_RUBRIC, "parser": DEFAULT_PARSER}.items():
            if getattr(self, field) is None:
                setattr(self, field, default)
        if self.parser == "json_field" and self.score_field is None:
            problems.add("score_field", "the json_field parser reads the score at a key: name it, e.g. 'score'")
        if self.parser != "json_field" and self.score_field is not None:
            problems.add("score_field", f"only the json_field parser reads score_field, not {self.parser!r}")


def check_reward_url(value: str, allow_private: bool) -> str:
    """An http(s) URL with a host, no credentials in it (the token travels in a header, never in logs), and a
    destination the platform may call (trainer.spec.destinations). The string returned is the one checked: a
    character that urlsplit would drop or a client would refuse (control characters, whitespace) is refused."""
    if any(char.isspace() or unicodedata.category(char) == "Cc" for char in value):
        raise ValueError("control characters and whitespace are not allowed in a URL")
    url = value.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// URL with a host")
    if not parts.hostname.isascii():
        raise ValueError("write an international host name in its ASCII (xn--) form")
    if parts.username or parts.password:
        raise ValueError("put no credentials in the URL; the trainer sends SFUMATO_REWARD_TOKEN as a bearer token")
    if parts.query or parts.fragment:
        raise ValueError("give the server's base URL, without a query or fragment")
    try:
        parts.port  # noqa: B018  (raises on a port that is not 0..65535)
    except ValueError as exc:
        raise ValueError(f"{value!r} has no valid port: {exc}") from None
    try:
        check_host(parts.hostname, allow_private)
    except RefusedDestination as exc:
        raise ValueError(str(exc)) from None
    return url


MAX_EVAL_PROMPTS = 64


class PromptsSpec(Section):
    source: str = Field(
        "builtin:colors",
        description="'builtin:colors', 'builtin:shapes' (the shapes model's captions but the one in ten held out "
        "for evaluations, builtin:shapes-heldout), a team's dataset on the platform, 'dataset:<name>[@<version>]"
        "[:train|:test]' (the latest version and the train split unless named; the platform pins the version at "
        "submit), or a text file with one prompt per line; a relative path is resolved at submit against the "
        "platform's data root and stored absolute",
    )
    eval: list[str] = Field(
        default_factory=lambda: ["a red apple", "a blue ocean"],
        max_length=MAX_EVAL_PROMPTS,
        description="fixed prompts sampled with fixed seeds every samples.every steps",
    )
    eval_source: str | None = Field(
        None,
        description="a team's dataset, 'dataset:<name>[@<version>][:train|:test]' (usually its ':test' split), "
        f"whose first {MAX_EVAL_PROMPTS} prompts replace `eval`; pinned at submit as prompts.source is",
    )

    @field_validator("eval_source")
    @classmethod
    def _eval_dataset(cls, value: str | None) -> str | None:
        if value is not None:
            parse_dataset_source(value)
        return value

    @field_validator("source")
    @classmethod
    def _source_exists(cls, value: str, info: ValidationInfo) -> str:
        if is_dataset_source(value):
            parse_dataset_source(value)
            return value
        if value.startswith("builtin:"):
            if value not in BUILTIN_PROMPT_SOURCES:
                raise ValueError(f"unknown built-in prompt set {value!r}; allowed: {', '.join(BUILTIN_PROMPT_SOURCES)}")
            return value
        return check_local_path(value, "prompt file", info)

    @field_validator("eval")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        for prompt in value:
            if not prompt.strip() or len(prompt) > 1000:
                raise ValueError("each eval prompt must be 1..1000 characters")
        return value


class PoolSpec(Section):
    devices: int = Field(ge=1, le=1024, description="devices of this pool, all on one host")
    gpu_model: str | None = Field(None, max_length=128, description="only devices that report this model")


class PoolsSpec(Section):
    """DigenRL's two pools. The rollout pool's devices are ranks [0, rollout.devices), the trainer's the rest."""

    rollout: PoolSpec
    trainer: PoolSpec


class ResourcesSpec(Section):
    devices: int = Field(
        1, ge=1, le=1024, description="devices per node; with pools, the sum of the pools' devices (filled in)"
    )
    device_type: Literal["cuda", "cpu"] = "cpu"
    nodes: int = Field(1, ge=1, le=256, description="hosts with `devices` devices each; leave it out with pools")
    gpu_model: str | None = Field(None, max_length=128, description="only hosts whose devices report this model")
    priority: int = Field(0, ge=-100, le=100, description="higher runs first")
    exclusive: bool = Field(
        False,
        description="hold each host whole: start only where no device is in use, and let no other job "
        "start there until this one ends (fair timing for a comparison)",
    )
    pools: PoolsSpec | None = Field(
        None,
        description="digenrl: a rollout and a trainer pool, each on one host with its own gpu_model; the two "
        "pools share a host when one has room for both, else the job spans the two hosts",
    )
    memory_budget: int | None = Field(
        None,
        description="bytes each device may hold ('40GiB', '800MiB' or a byte count): lean_retain's "
        "max_retained_graphs, left out, becomes the most graphs that fit it (docs/memory-and-timing.md); "
        "default: no budget, no limit",
    )

    @field_validator("memory_budget", mode="before")
    @classmethod
    def _budget_size(cls, value: object) -> object:
        return value if value is None else parse_byte_size(value)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _pools_replace_the_flat_form(self) -> ResourcesSpec:
        if self.pools is None:
            return self
        total = self.pools.rollout.devices + self.pools.trainer.devices
        if "devices" in self.model_fields_set and self.devices != total:
            message = f"with pools it is the sum of the pools' devices ({total}); leave it out"
            raise SpecError("devices", message)
        if self.nodes != 1:
            raise SpecError("nodes", "with pools each pool takes one host (two in all at most); leave it out")
        if self.gpu_model is not None:
            raise SpecError("gpu_model", "with pools each pool names its own gpu_model; leave it out here")
        self.devices = total
        return self


class SamplesSpec(Section):
    every: int = Field(
        5, ge=1, description="log eval samples every N steps, at the last step, and as step 0 before training"
    )
    count: int = Field(2, ge=0, le=64, description="seeds per eval prompt")


class CheckpointSpec(Section):
    every: int = Field(0, ge=0, description="save every N steps; 0 saves only the final model")


class RetrySpec(Section):
    max_attempts: int = Field(
        3,
        ge=1,
        le=20,
        description="attempts the job's own failures may end before it fails (its trainer killed by SIGKILL, "
        "e.g. out of memory); a restart of the platform does not count",
    )
    max_platform_restarts: int = Field(
        10,
        ge=0,
        le=100,
        description="times the platform may restart the job after stopping it (a worker or host restarted, "
        "shut down or lost, a lost task, a platform part unreachable) before it fails",
    )
