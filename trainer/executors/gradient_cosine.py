"""The cosine of two flattened gradients, as the audit and JAGG's probes report it.

Rounding can push the raw quotient a hair past ±1, so it is clamped; a NaN (from a NaN or infinite gradient) stays
NaN, never a clamped 1.0 (``max(-1, min(1, nan))`` is 1.0), so that it fails a verdict.
"""

from __future__ import annotations

import math

import torch


def gradient_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    raw = float(torch.nn.functional.cosine_similarity(a, b, dim=0))
    return raw if math.isnan(raw) else max(-1.0, min(1.0, raw))
