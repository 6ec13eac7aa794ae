"""While the platform's caller check cannot be asked (the control plane restarting), a reward server keeps serving
the callers the platform accepted within the outage window and refuses the others with 503, which a trainer waits
out; once the platform answers again its answers decide."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from sfumato.cli.reward_server_process import reward_server
from trainer.reward_server.verified_callers import VerifiedCallers
from trainer.rewards.remote import RemoteReward, RewardServerUnreachable
from trainer.spec import RewardSpec

IMAGE = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
DOWN = "the platform's caller check at http://api/caller did not answer"


class CallerCheck(BaseHTTPRequestHandler):
    """The platform's GET /api/v1/services/{id}/caller: 200 for the job's reward tokens, each answer for its
    request only (no max-age), so every score request asks it."""

    def do_GET(self) -> None:
        accepted = self.headers.get("Authorization") in ("Bearer reward-token-old", "Bearer reward-token-new")
        self.send_response(200 if accepted else 403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def caller_check() -> Iterator[ThreadingHTTPServer]:
    platform = ThreadingHTTPServer(("127.0.0.1", 0), CallerCheck)
    threading.Thread(target=platform.serve_forever, daemon=True).start()
    try:
        yield platform
    finally:
        platform.shutdown()
        platform.server_close()


def score_as(monkeypatch: pytest.MonkeyPatch, token: str, url: str, outage_window_s: float = 0) -> list[float]:
    monkeypatch.setenv("SFUMATO_REWARD_TOKEN", token)
    spec = RewardSpec.model_validate({"name": "remote", "url": url, "outage_window_s": outage_window_s})
    scores, _ = RemoteReward(spec)(IMAGE, ["a red apple"])
    return scores.tolist()


def test_a_caller_verified_before_the_control_plane_went_down_is_still_served_and_a_new_one_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with caller_check() as platform:
        auth_url = f"http://127.0.0.1:{platform.server_address[1]}/api/v1/services/3/caller"
        with reward_server("--reward", "brightness", "--auth-url", auth_url, "--outage-window-s", "600") as server:
            score_as(monkeypatch, "reward-token-old", server.url)  # verified while the platform answers
            platform.shutdown()
            platform.server_close()  # the control plane is down: its port refuses connections

            assert len(score_as(monkeypatch, "reward-token-old", server.url)) == 1
            with pytest.raises(RewardServerUnreachable, match="answered 503: the platform's caller check at"):
                score_as(monkeypatch, "reward-token-new", server.url)  # never verified: refused until it returns


def test_a_verified_caller_is_honoured_up_to_the_window_after_its_last_acceptance() -> None:
    callers = VerifiedCallers(window_s=120)
    callers.record("job-7", accepted=True, now=1000.0)

    assert callers.honours("job-7", now=1120.0, problem=DOWN)
    assert not callers.honours("job-7", now=1120.5, problem=DOWN)


def test_a_caller_the_platform_refused_since_is_not_honoured_in_an_outage() -> None:
    callers = VerifiedCallers(window_s=120)
    callers.record("job-7", accepted=True, now=1000.0)
    callers.record("job-7", accepted=False, now=1010.0)  # the job ended, or its token was revoked

    assert not callers.honours("job-7", now=1011.0, problem=DOWN)


def test_a_caller_never_verified_is_not_honoured_in_an_outage() -> None:
    callers = VerifiedCallers(window_s=120)
    callers.record("job-7", accepted=True, now=1000.0)

    assert not callers.honours("job-8", now=1001.0, problem=DOWN)
