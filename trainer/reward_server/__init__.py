"""``sfumato reward-server``: one reward served over the reward protocol (docs/rewards.md)."""
