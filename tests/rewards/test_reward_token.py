"""The bearer token the remote reward sends: a token set for the reward wins, else the job token (node 0 of a
job), else the node token (its other nodes), else none."""

from __future__ import annotations

import pytest

from trainer.rewards.remote import TOKEN_VARIABLES, reward_token


@pytest.mark.parametrize(
    ("environment", "sent"),
    [
        ({"SFUMATO_REWARD_TOKEN": "reward", "SFUMATO_JOB_TOKEN": "sfj_job"}, "reward"),
        ({"SFUMATO_REWARD_TOKEN": "reward", "SFUMATO_NODE_TOKEN": "sfn_node"}, "reward"),
        ({"SFUMATO_JOB_TOKEN": "sfj_job"}, "sfj_job"),
        ({"SFUMATO_NODE_TOKEN": "sfn_node"}, "sfn_node"),
        ({"SFUMATO_REWARD_TOKEN": "", "SFUMATO_NODE_TOKEN": "sfn_node"}, "sfn_node"),
        ({}, None),
    ],
)
def test_the_reward_token_wins_then_the_job_token_then_the_node_token(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], sent: str | None
) -> None:
    for name in TOKEN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert reward_token() == sent
