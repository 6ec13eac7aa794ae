"""A reward server's sub-scores reach the step's parts as ``<name>/<sub>`` (logged as ``reward/remote/<sub>``)
and weigh nothing in the total; a video's frames are averaged like its score."""

from __future__ import annotations

import torch

from tests.rewards.reward_server_harness import misbehaving_peer
from trainer.rewards.registry import WeightedReward
from trainer.spec import RewardSpec


def test_sub_scores_are_parts_of_their_own_and_only_the_score_is_weighted() -> None:
    answer = {"scores": [0.2, 0.4], "sub_scores": {"aesthetic": [5.0, 7.0]}}
    with misbehaving_peer((200, answer)) as peer:
        reward = WeightedReward([RewardSpec(name="remote", url=peer.url, weight=0.5)], torch.device("cpu"))
        total, parts = reward(torch.rand(2, 3, 8, 8), ["a red apple", "a blue car"])
    assert sorted(parts) == ["remote", "remote/aesthetic"]
    assert parts["remote/aesthetic"].tolist() == [5.0, 7.0]
    assert total.tolist() == torch.tensor([0.1, 0.2]).tolist()


def test_a_video_s_frames_are_scored_and_averaged_sub_scores_included() -> None:
    answer = {"scores": [0.0, 1.0, 2.0, 3.0], "sub_scores": {"motion": [1.0, 3.0, 5.0, 7.0]}}
    with misbehaving_peer((200, answer)) as peer:
        reward = WeightedReward([RewardSpec(name="remote", url=peer.url)], torch.device("cpu"))
        total, parts = reward(torch.rand(2, 2, 3, 8, 8), ["a red apple", "a blue car"])  # 2 videos of 2 frames
    assert total.tolist() == [0.5, 2.5] and parts["remote/motion"].tolist() == [2.0, 6.0]
