"""A remote reward's scores are parts under the name of the reward its server serves (its `GET /healthz`), with
its sub-scores under `<name>/<sub>`, as a local reward's are; two entries of one name are told apart (real
`sfumato reward-server` processes, one serving a plugin that gives sub-scores)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from sfumato.cli.reward_server_process import REPO, reward_server
from trainer.rewards.registry import WeightedReward
from trainer.spec import RewardSpec

PROMPTS = ["a red apple", "a blue car"]
PLUGIN = "halves"  # the plugin's reward: the mean of each image's left and right half, both as sub-scores


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A folder that, on the server's import path, registers the `halves` reward under the sfumato.rewards
    entry point group, as an installed plugin package does."""
    (tmp_path / "halves_reward.py").write_text(
        textwrap.dedent(
            """
            def make(path, device):
                def halves(images, prompts):
                    middle = images.shape[-1] // 2
                    left = images[..., :middle].mean(dim=(1, 2, 3))
                    right = images[..., middle:].mean(dim=(1, 2, 3))
                    return (left + right) / 2, {"left": left, "right": right}

                return halves
            """
        )
    )
    info = tmp_path / "sfumato_halves-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sfumato-halves\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[sfumato.rewards]\n{PLUGIN} = halves_reward:make\n")
    return tmp_path


def half_dark_images() -> torch.Tensor:
    images = torch.ones(2, 3, 8, 8)
    images[..., :4] = 0.0
    return images


def test_a_servers_scores_are_parts_under_the_reward_it_serves() -> None:
    with reward_server("--reward", "brightness") as server:
        reward = WeightedReward([RewardSpec(name="remote", url=server.url)], torch.device("cpu"))
        _, parts = reward(half_dark_images(), PROMPTS)
    assert reward.names == ["brightness"]
    assert sorted(parts) == ["brightness"]


def test_a_plugin_servers_sub_scores_are_parts_under_its_name(plugin_path: Path) -> None:
    env = {"PYTHONPATH": f"{REPO}:{plugin_path}"}
    with reward_server("--reward", PLUGIN, env=env) as server:
        reward = WeightedReward([RewardSpec(name="remote", url=server.url)], torch.device("cpu"))
        total, parts = reward(half_dark_images(), PROMPTS)
    assert sorted(parts) == [PLUGIN, f"{PLUGIN}/left", f"{PLUGIN}/right"]
    assert parts[f"{PLUGIN}/left"].tolist() == [0.0, 0.0] and parts[f"{PLUGIN}/right"].tolist() == [1.0, 1.0]
    assert total.tolist() == [0.5, 0.5]


def test_a_local_and_a_remote_entry_of_one_reward_are_told_apart_and_each_weighed() -> None:
    images = torch.rand(2, 3, 8, 8)
    with reward_server("--reward", "brightness") as server:
        specs = [RewardSpec(name="brightness", weight=1.0), RewardSpec(name="remote", url=server.url, weight=-1.0)]
        reward = WeightedReward(specs, torch.device("cpu"))
        total, parts = reward(images, PROMPTS)
    assert reward.names == ["brightness", "brightness_2"]
    assert torch.allclose(parts["brightness"], parts["brightness_2"], atol=1 / 255)  # the server sees 8-bit PNGs
    assert torch.allclose(total, parts["brightness"] - parts["brightness_2"])
