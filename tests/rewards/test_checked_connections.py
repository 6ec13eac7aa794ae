"""The remote reward judges the addresses a reward URL's host resolves to when it connects, not only the URL as
written at submit: a host that resolves to a metadata or link-local address fails the step at once, and with
private destinations refused a name that resolves to loopback is never connected to."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import torch

from tests.rewards.reward_server_harness import misbehaving_peer
from trainer.rewards.checked_connections import checked_transport
from trainer.rewards.remote import RemoteReward, RemoteRewardError
from trainer.spec import RewardSpec
from trainer.spec.destinations import RefusedDestination

IMAGES = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))


def test_a_reward_host_resolving_to_a_metadata_address_fails_the_step_at_once_without_retries() -> None:
    # The URL's check at submit is skipped (model_construct), as for a name that resolved elsewhere back then:
    # the resolver's answer now is a metadata address, and no retry or outage window can make it callable.
    spec = RewardSpec.model_construct(
        name="remote", url="http://169.254.169.254/latest", batch_size=16, timeout_s=5.0, retries=3,
        outage_window_s=300.0,
    )  # fmt: skip
    with pytest.raises(RemoteRewardError, match=r"not called: 169\.254\.169\.254 is a cloud metadata address"):
        RemoteReward(spec)(IMAGES, ["a", "b"])


def test_a_name_resolving_to_loopback_is_never_connected_to_where_private_destinations_are_refused() -> None:
    async def get(url: str) -> int:
        async with httpx.AsyncClient(transport=checked_transport(allow_private=False)) as client:
            return (await client.get(url)).status_code

    with misbehaving_peer((200, {"scores": [0.5, 0.5]})) as peer:
        port = peer.url.rsplit(":", 1)[1]
        with pytest.raises(RefusedDestination, match="loopback or private"):
            asyncio.run(get(f"http://localhost:{port}/score"))
        assert peer.requests == 0


def test_a_name_resolving_to_loopback_is_called_where_private_destinations_are_allowed() -> None:
    with misbehaving_peer((200, {"scores": [0.25, 0.75]})) as peer:
        url = peer.url.replace("127.0.0.1", "localhost")
        scores, _subs = RemoteReward(RewardSpec.model_validate({"name": "remote", "url": url}))(IMAGES, ["a", "b"])
    assert scores.tolist() == [0.25, 0.75] and peer.requests == 1
