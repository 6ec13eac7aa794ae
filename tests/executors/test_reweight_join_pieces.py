"""lean_reweight rolls each sample out alone; join_pieces stacks the pieces into the step's one trajectory (logged,
scored, and re-forwarded by native's fallback and the hybrid schedule), with the unconditional embeddings that a
CFG scale above 1 rolls out beside the prompts'."""

from __future__ import annotations

import torch

from trainer.executors.lean_reweight import join_pieces
from trainer.models.base import Conditioning
from trainer.rollout import Trajectory


def piece(row: float, *, cfg: bool) -> Trajectory:
    """One sample's rollout whose every tensor holds `row`, so that the joined order shows."""

    def filled(*shape: int) -> torch.Tensor:
        return torch.full(shape, row)

    cond = Conditioning(filled(1, 4, 8), filled(1, 8), None)
    uncond = Conditioning(-filled(1, 4, 8), -filled(1, 8), None) if cfg else None
    return Trajectory(filled(1, 4, 2, 2), filled(1, 3), cond, uncond, filled(1, 3, 2, 2))


def test_joined_pieces_stack_every_tensor_in_row_order() -> None:
    joined = join_pieces([piece(0.0, cfg=False), piece(1.0, cfg=False)])
    for tensor in (joined.latents, joined.log_probs, joined.cond.hidden, joined.cond.pooled, joined.images):
        assert tensor is not None
        assert [float(row.unique()) for row in tensor] == [0.0, 1.0]
    assert joined.uncond is None


def test_joined_pieces_of_a_cfg_rollout_keep_each_sample_s_unconditional_embeddings() -> None:
    joined = join_pieces([piece(1.0, cfg=True), piece(2.0, cfg=True)])
    assert joined.uncond is not None and joined.uncond.pooled is not None
    assert [float(row.unique()) for row in joined.uncond.hidden] == [-1.0, -2.0]
    assert [float(row.unique()) for row in joined.uncond.pooled] == [-1.0, -2.0]
