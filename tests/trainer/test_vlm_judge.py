"""The vlm_judge reward against a real OpenAI-compatible chat server (FastAPI under uvicorn, started here) that
answers from a fixed table: the rubric's text and the image's dominant colour give the answer."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from fastapi import FastAPI
from PIL import Image
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec
from tests.web.page_fixtures import served
from trainer.rewards.registry import WeightedReward
from trainer.rewards.remote import RemoteRewardError
from trainer.spec import RewardSpec, parse_spec, spec_errors

RATE = "Rate how well the image shows {prompt} from 0 to 10."
ASK = "Is this {prompt}? Answer yes or no."
GRADE = 'Grade the image for {prompt} as JSON {{"score": ...}}.'
ANSWERS = {
    ("Rate how well the image shows a red square from 0 to 10.", "red"): "Score: 9",
    ("Rate how well the image shows a red square from 0 to 10.", "blue"): "I would give it 2/10.",
    ("Is this a red square? Answer yes or no.", "red"): "Yes.",
    ("Is this a red square? Answer yes or no.", "blue"): "No, it is blue.",
    ('Grade the image for a red square as JSON {"score": ...}.', "red"): '```json\n{"score": 0.75, "why": "red"}\n```',
    ("Rate how well the image shows a garbled thing from 0 to 10.", "red"): "I cannot judge this image.",
}


class JudgeServer:
    """The chat-completions API, answering from ANSWERS; it counts questions and the most asked at once."""

    def __init__(self) -> None:
        self.questions: list[str] = []
        self.models: set[str] = set()
        self.in_flight = self.most_in_flight = 0
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.chat)

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            image_part, text_part = body["messages"][0]["content"]
            data = image_part["image_url"]["url"].removeprefix("data:image/png;base64,")
            pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), dtype=float)
            colour = "red" if pixels[..., 0].mean() > pixels[..., 2].mean() else "blue"
            self.questions.append(text_part["text"])
            self.models.add(body["model"])
            answer = ANSWERS[(text_part["text"], colour)]
            return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": answer}, "finish_reason": "stop"}]}  # fmt: skip
        finally:
            self.in_flight -= 1


@pytest.fixture(scope="module")
def judge() -> Iterator[tuple[JudgeServer, str]]:
    server = JudgeServer()
    with served(server.app) as url:
        yield server, url


def solid(rgb: tuple[float, float, float]) -> torch.Tensor:
    return torch.tensor(rgb).view(3, 1, 1).expand(3, 16, 16).clone()


RED, BLUE = solid((0.9, 0.1, 0.1)), solid((0.1, 0.1, 0.9))


def judge_reward(url: str, **options: Any) -> WeightedReward:
    spec = RewardSpec.model_validate({"name": "vlm_judge", "url": url, "judge_model": "judge-7b", **options})
    return WeightedReward([spec], torch.device("cpu"))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"rubric": RATE}, [0.9, 0.2]),
        ({"rubric": ASK, "parser": "yes_no"}, [1.0, 0.0]),
    ],
    ids=["number_0_10", "yes_no"],
)
def test_the_judges_answers_become_scores_by_the_named_parser(
    judge: tuple[JudgeServer, str], options: dict[str, Any], expected: list[float]
) -> None:
    server, url = judge
    total, parts = judge_reward(url, **options)(torch.stack([RED, BLUE]), ["a red square"] * 2)
    assert total.tolist() == pytest.approx(expected)
    assert set(parts) == {"vlm_judge"}
    assert server.models == {"judge-7b"}


def test_the_json_field_parser_reads_the_named_key_of_a_fenced_object(judge: tuple[JudgeServer, str]) -> None:
    _, url = judge
    total, _ = judge_reward(url, rubric=GRADE, parser="json_field", score_field="score")(RED[None], ["a red square"])
    assert total.tolist() == [0.75]


def test_requests_run_batch_size_at_a_time(judge: tuple[JudgeServer, str]) -> None:
    server, url = judge
    server.most_in_flight = 0
    total, _ = judge_reward(url, rubric=RATE, batch_size=2)(torch.stack([RED, BLUE] * 4), ["a red square"] * 8)
    assert total.tolist() == pytest.approx([0.9, 0.2] * 4)
    assert 1 <= server.most_in_flight <= 2


def test_an_answer_that_does_not_parse_is_retried_then_fails_the_step_quoting_it(
    judge: tuple[JudgeServer, str],
) -> None:
    server, url = judge
    asked = len(server.questions)
    reward = judge_reward(url, rubric=RATE, retries=1)
    with pytest.raises(RemoteRewardError) as failure:
        reward(RED[None], ["a garbled thing"])
    assert '"I cannot judge this image."' in str(failure.value)
    assert "number_0_10" in str(failure.value) and "retries=1" in str(failure.value)
    assert len(server.questions) - asked == 2  # the first try and one retry


@pytest.mark.parametrize(
    ("reward", "field"),
    [
        ({"name": "vlm_judge", "judge_model": "m"}, "reward.0.url"),
        ({"name": "vlm_judge", "url": "http://127.0.0.1:8000"}, "reward.0.judge_model"),
        ({"name": "vlm_judge", "url": "http://127.0.0.1:8000", "judge_model": "m", "parser": "json_field"},
         "reward.0.score_field"),
        ({"name": "vlm_judge", "url": "http://127.0.0.1:8000", "judge_model": "m", "parser": "maybe"},
         "reward.0.parser"),
        ({"name": "vlm_judge", "url": "http://127.0.0.1:8000", "judge_model": "m", "rubric": "{image} {prompt}"},
         "reward.0.rubric"),
        ({"name": "brightness", "judge_model": "m"}, "reward.0.judge_model"),
    ],
    ids=["no-url", "no-model", "json-without-field", "unknown-parser", "unknown-placeholder", "judge-option-elsewhere"],
)  # fmt: skip
def test_a_bad_judge_option_is_refused_naming_the_field(reward: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[reward]))
    assert field in [problem["field"] for problem in spec_errors(error.value)]


def test_a_spec_trains_and_evaluates_with_the_judge_and_fills_its_defaults() -> None:
    spec = parse_spec(tiny_spec(reward=[{"name": "vlm_judge", "url": "http://127.0.0.1:8000", "judge_model": "m"}]))
    judge = spec.reward[0]
    assert (judge.parser, judge.batch_size, judge.retries) == ("number_0_10", 16, 3)
    assert "{prompt}" in (judge.rubric or "")
