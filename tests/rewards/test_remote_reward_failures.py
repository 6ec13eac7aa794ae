"""The remote reward refuses a broken answer naming the reward and its URL, retries an error the server answers
up to its retries, waits out a server that does not answer up to its outage window and then ends as a platform
outage: never a made-up score."""

from __future__ import annotations

import socket

import pytest
import torch

from tests.rewards.reward_server_harness import misbehaving_peer
from trainer.platform_outage import PlatformOutage
from trainer.rewards.remote import RemoteReward, RemoteRewardError, RewardServerUnreachable
from trainer.spec import RewardSpec

IMAGES = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
PROMPTS = ["a red apple", "a blue car", "a green tree"]


def remote(url: str, **options: object) -> RemoteReward:
    return RemoteReward(RewardSpec.model_validate({"name": "remote", "url": url, **options}))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"scores": [0.1, 0.2]}, "scores: 2 values for 3 images"),
        ({"scores": [0.1, float("nan"), 0.3]}, "scores: holds NaN or infinity"),
        ({"scores": [0.1, 0.2, 0.3], "sub_scores": {"aesthetic": [1.0]}}, "sub_scores.aesthetic: 1 values for 3"),
        (b"<html>busy</html>", "the response is not a score answer"),
        ({"scores": [0.1] * 1_000_000}, "refused an answer over 4194304 bytes"),
    ],
)
def test_a_broken_answer_is_refused_at_once_naming_the_reward_and_url(answer: object, message: str) -> None:
    with misbehaving_peer((200, answer)) as peer, pytest.raises(RemoteRewardError) as error:
        remote(peer.url, retries=3)(IMAGES, PROMPTS)
    assert str(error.value).startswith(f"reward 'remote' at {peer.url}: ") and message in str(error.value)
    assert peer.requests == 1  # the same server would break the same way again


def test_a_slow_loris_answer_is_cut_off_at_the_timeout_and_waited_out_as_an_outage() -> None:
    cut_off = r"no answer for \d+ s of outage_window_s=2 \(2 tries\): no complete answer within timeout_s=1"
    peer_answer = (200, {"scores": [0.1, 0.2, 0.3]})
    with misbehaving_peer(peer_answer, trickle=True) as peer, pytest.raises(RewardServerUnreachable, match=cut_off):
        remote(peer.url, timeout_s=1, outage_window_s=2)(IMAGES, PROMPTS)
    assert peer.requests == 2  # cut off at 1 s, again after ~0.5 s, cut off at ~2.5 s: past the window


def test_a_restarting_server_is_waited_out_whatever_the_retries() -> None:
    busy = (503, {"error": "the platform's caller check did not answer"})
    with misbehaving_peer(
        busy, busy, busy, (200, {"scores": [0.1, 0.2, 0.3], "sub_scores": {"sharp": [1, 2, 3]}})
    ) as peer:
        scores, sub_scores = remote(peer.url, retries=0, outage_window_s=30)(IMAGES, PROMPTS)
    assert peer.requests == 4
    assert scores.tolist() == pytest.approx([0.1, 0.2, 0.3]) and sub_scores["sharp"].tolist() == [1, 2, 3]


def test_an_error_the_reward_answers_is_retried_up_to_its_retries_and_then_fails_the_job() -> None:
    failed = (500, {"error": "reward 'pickscore' failed: RuntimeError: CUDA error"})
    with misbehaving_peer(failed) as peer, pytest.raises(RemoteRewardError) as error:
        remote(peer.url, retries=2, outage_window_s=60)(IMAGES, PROMPTS)
    assert peer.requests == 3
    assert not isinstance(error.value, PlatformOutage)  # the reward's own failure: the job's error, not retried
    assert str(error.value) == (
        f"reward 'remote' at {peer.url}: gave up after 3 tries (retries=2): answered 500: reward 'pickscore' "
        "failed: RuntimeError: CUDA error"
    )


def test_an_overloaded_server_is_retried_until_it_answers() -> None:
    overloaded = (429, {"error": "too many requests"})
    with misbehaving_peer(overloaded, overloaded, (200, {"scores": [0.1, 0.2, 0.3]})) as peer:
        scores, _ = remote(peer.url, retries=2)(IMAGES, PROMPTS)
    assert peer.requests == 3 and scores.tolist() == pytest.approx([0.1, 0.2, 0.3])


def test_a_refusal_is_not_retried_and_carries_the_servers_error() -> None:
    refusal = (400, {"error": "images[0]: not a PNG or WebP file"})
    carried = r"answered 400: images\[0\]: not a PNG or WebP file"
    with misbehaving_peer(refusal) as peer, pytest.raises(RemoteRewardError, match=carried):
        remote(peer.url, retries=3)(IMAGES, PROMPTS)
    assert peer.requests == 1


def test_a_server_unreachable_for_the_whole_outage_window_is_a_platform_outage_naming_the_reward_and_url() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(RewardServerUnreachable) as error:
        remote(url, retries=0, outage_window_s=1)(IMAGES, PROMPTS)
    assert isinstance(error.value, PlatformOutage)
    assert str(error.value).startswith(f"reward 'remote' at {url}: no answer for ")
    assert "outage_window_s=1 (" in str(error.value) and "cannot reach it (ConnectError" in str(error.value)


def test_a_server_answering_unavailable_for_the_whole_window_is_a_platform_outage() -> None:
    unavailable = (503, {"error": "the platform's caller check at http://api/caller did not answer"})
    with (
        misbehaving_peer(unavailable) as peer,
        pytest.raises(RewardServerUnreachable, match="answered 503: the platform"),
    ):
        remote(peer.url, retries=5, outage_window_s=0)(IMAGES, PROMPTS)
    assert peer.requests == 1  # a window of 0: no wait at all


def test_each_request_holds_at_most_batch_size_images() -> None:
    with misbehaving_peer((200, {"scores": [0.5]})) as peer:  # one score: a request of more images is refused
        scores, _ = remote(peer.url, batch_size=1)(IMAGES, PROMPTS)
    assert peer.requests == 3 and scores.tolist() == [0.5, 0.5, 0.5]
