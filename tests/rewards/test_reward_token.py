"""The bearer token the remote reward sends: SFUMATO_REWARD_TOKEN (under the platform, the reward token the worker
gives every node), else none; never the job token, which writes the job's metrics, whatever URL the spec names."""

from __future__ import annotations

import pytest

from trainer.rewards.remote import REWARD_TOKEN_VARIABLE, reward_token


@pytest.mark.parametrize(
    ("environment", "sent"),
    [
        ({"SFUMATO_REWARD_TOKEN": "sfr_reward", "SFUMATO_JOB_TOKEN": "sfj_job"}, "sfr_reward"),
        ({"SFUMATO_REWARD_TOKEN": "sfn_node"}, "sfn_node"),
        ({"SFUMATO_JOB_TOKEN": "sfj_job"}, None),
        ({"SFUMATO_REWARD_TOKEN": "", "SFUMATO_JOB_TOKEN": "sfj_job"}, None),
        ({}, None),
    ],
)
def test_the_reward_token_is_sent_and_the_job_token_never(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], sent: str | None
) -> None:
    for name in (REWARD_TOKEN_VARIABLE, "SFUMATO_JOB_TOKEN", "SFUMATO_NODE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert reward_token() == sent
