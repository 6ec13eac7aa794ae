"""Deterministic random streams keyed by what they are for, so runs and resumes reproduce.

Per-sample noise is keyed by (seed, step, global sample id): distinct for every group member
(no duplicate samples) and independent of how samples are laid out on ranks.
"""

from __future__ import annotations

import hashlib

import torch


def stream_seed(*key: object) -> int:
    digest = hashlib.sha256(":".join(str(part) for part in key).encode()).digest()
    return int.from_bytes(digest[:7], "little")


def step_generator(seed: int, step: int, purpose: str) -> torch.Generator:
    """Identical on every rank: for decisions the whole job shares (prompts, windows)."""
    return torch.Generator().manual_seed(stream_seed(seed, step, purpose))


def group_start_seed(seed: int, step: int, group_id: int) -> int:
    """The seed of a prompt group's starting noise x_0, shared by its members (``algorithm.init_same_noise``)."""
    return stream_seed(seed, step, "group-start", group_id)


def sample_seed(seed: int, step: int, sample_id: int) -> int:
    """The seed of one sample's noise stream (trainer/sampling/noise.py draws it on the job's device)."""
    return stream_seed(seed, step, "sample", sample_id)
