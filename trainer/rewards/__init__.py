"""Rewards: one file each, all reachable through ``trainer.rewards.registry``."""
