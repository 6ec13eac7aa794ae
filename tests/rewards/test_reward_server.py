"""`sfumato reward-server` as a process: the scores of local scoring, batching across callers, its checks."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import torch

from sfumato.cli.reward_server_process import RewardServer, reward_server
from trainer.rewards.brightness import brightness
from trainer.rewards.remote import RemoteReward, RemoteRewardError
from trainer.spec import RewardSpec

PROMPTS = ["a red apple", "a blue car", "a green tree", "a photo of the sky", "a yellow sun"]


@pytest.fixture(scope="module")
def brightness_server() -> Iterator[RewardServer]:
    with reward_server("--reward", "brightness", "--max-wait-ms", "300") as server:
        yield server


def remote(url: str, **options: object) -> RemoteReward:
    return RemoteReward(RewardSpec.model_validate({"name": "remote", "url": url, **options}))


def images(count: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(count, 3, 24, 24, generator=torch.Generator().manual_seed(seed))


def test_served_brightness_equals_local_brightness_of_the_same_8_bit_images(brightness_server: RewardServer) -> None:
    batch = images(5)
    scores, sub_scores = remote(brightness_server.url, batch_size=2)(batch, PROMPTS)
    eight_bit = (batch * 255).round().to(torch.uint8).float() / 255  # what the PNGs hold
    assert torch.equal(scores, brightness(eight_bit, PROMPTS)) and sub_scores == {}


def test_health_names_the_served_reward(brightness_server: RewardServer) -> None:
    answer = httpx.get(f"{brightness_server.url}/healthz", timeout=10)
    assert answer.status_code == 200 and answer.json() == {"status": "ok", "reward": "brightness"}


def test_concurrent_callers_share_batches(brightness_server: RewardServer) -> None:
    """Eight trainers with one request of 2 images each, inside one 300 ms window: fewer batches than requests."""
    before = brightness_server.metrics()
    callers = [remote(brightness_server.url, batch_size=2) for _ in range(8)]
    threads = [threading.Thread(target=caller, args=(images(2, seed), PROMPTS[:2])) for seed, caller in
               enumerate(callers)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = brightness_server.metrics()
    batches = after["sfumato_reward_batch_size_count"] - before["sfumato_reward_batch_size_count"]
    scored = after["sfumato_reward_batch_size_sum"] - before["sfumato_reward_batch_size_sum"]
    requests = after["sfumato_reward_requests_total"] - before["sfumato_reward_requests_total"]
    assert scored == 16 and requests == 8 and batches < requests
    assert after["sfumato_reward_batch_size_bucket{le=+Inf}"] == after["sfumato_reward_batch_size_count"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"images": [base64.b64encode(b"GIF89a....").decode()], "prompts": ["x"]}, "images[0]: not a PNG or WebP"),
        ({"images": ["%%%"], "prompts": ["x"]}, "images[0]: not base64"),
        ({"images": [], "prompts": []}, "images"),
        ({"prompts": ["x"]}, "images"),
        ({"images": ["iVBORw0KGgo="], "prompts": ["x", "y"]}, "prompts: 2 prompts for 1 images"),
        ({"images": ["iVBORw0KGgo="], "prompts": ["x"], "pickle": "gASV"}, "pickle"),
    ],
)
def test_a_malformed_request_is_refused_with_400_naming_the_field(
    brightness_server: RewardServer, body: dict, message: str
) -> None:
    answer = httpx.post(f"{brightness_server.url}/v1/score", json=body, timeout=10)
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_a_body_over_the_cap_is_refused_with_413(brightness_server: RewardServer) -> None:
    answer = httpx.post(
        f"{brightness_server.url}/v1/score", content=b"{" + b" " * (64 * 1024 * 1024), timeout=30,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert answer.status_code == 413


def test_a_server_with_a_service_token_refuses_callers_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with reward_server("--reward", "brightness", env={"SFUMATO_REWARD_SERVICE_TOKEN": "s3cret"}) as server:
        monkeypatch.delenv("SFUMATO_REWARD_TOKEN", raising=False)
        with pytest.raises(RemoteRewardError, match=rf"reward 'remote' at {server.url}: answered 401"):
            remote(server.url, retries=2)(images(1), PROMPTS[:1])
        monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "wrong")
        with pytest.raises(RemoteRewardError, match="answered 401"):
            remote(server.url)(images(1), PROMPTS[:1])
        monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "s3cret")
        scores, _ = remote(server.url)(images(1), PROMPTS[:1])
        metrics = server.metrics()
    assert scores.shape == (1,)
    assert metrics["sfumato_reward_requests_total"] == 3 and metrics["sfumato_reward_errors_total"] == 2


class CallerCheck(BaseHTTPRequestHandler):
    """The platform's GET /api/v1/services/{id}/caller as the reward server sees it: 200 for two reward tokens,
    one vouched for a minute, the other for this request only (no max-age)."""

    asked = 0

    def do_GET(self) -> None:
        CallerCheck.asked += 1
        token = self.headers.get("Authorization")
        self.send_response(200 if token in ("Bearer reward-token-7", "Bearer reward-token-8") else 403)
        if token == "Bearer reward-token-7":
            self.send_header("Cache-Control", "private, max-age=60")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def test_a_server_with_an_auth_url_accepts_the_tokens_the_platform_accepts_and_remembers_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform = ThreadingHTTPServer(("127.0.0.1", 0), CallerCheck)
    threading.Thread(target=platform.serve_forever, daemon=True).start()
    auth_url = f"http://127.0.0.1:{platform.server_address[1]}/api/v1/services/3/caller"
    monkeypatch.delenv("SFUMATO_REWARD_TOKEN", raising=False)
    try:
        with reward_server("--reward", "brightness", "--auth-url", auth_url) as server:
            monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "reward-token-7")
            accepted = remote(server.url, batch_size=1)
            accepted(images(1), PROMPTS[:1])
            accepted(images(2), PROMPTS[:2])  # two more requests on the remembered verdict
            monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "another-teams-token")
            with pytest.raises(RemoteRewardError, match="answered 401"):
                remote(server.url)(images(1), PROMPTS[:1])
    finally:
        platform.shutdown()
        platform.server_close()
    assert CallerCheck.asked == 2  # the accepted token once (then remembered), the refused one once


def test_a_verdict_without_a_max_age_holds_for_its_request_only(monkeypatch: pytest.MonkeyPatch) -> None:
    platform = ThreadingHTTPServer(("127.0.0.1", 0), CallerCheck)
    threading.Thread(target=platform.serve_forever, daemon=True).start()
    auth_url = f"http://127.0.0.1:{platform.server_address[1]}/api/v1/services/3/caller"
    CallerCheck.asked = 0
    monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "reward-token-8")
    try:
        with reward_server("--reward", "brightness", "--auth-url", auth_url) as server:
            caller = remote(server.url)
            for seed in range(3):
                caller(images(1, seed), PROMPTS[:1])
    finally:
        platform.shutdown()
        platform.server_close()
    assert CallerCheck.asked == 3  # asked again for every request


def test_metrics_answer_only_the_service_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with reward_server("--reward", "brightness", env={"SFUMATO_REWARD_SERVICE_TOKEN": "s3cret"}) as server:
        monkeypatch.setenv("SFUMATO_REWARD_TOKEN", "s3cret")
        remote(server.url)(images(1), PROMPTS[:1])
        refused = [
            httpx.get(f"{server.url}/metrics", headers=headers, timeout=10).status_code
            for headers in ({}, {"Authorization": "Bearer wrong"})
        ]
        scraped = server.metrics()  # with the service token, as the platform scrapes

    assert refused == [401, 401]
    assert scraped["sfumato_reward_images_total"] == 1
