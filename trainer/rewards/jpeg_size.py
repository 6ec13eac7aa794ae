"""Encoded JPEG size at quality 95, in kB (the DDPO compressibility rewards use its sign)."""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image


def jpeg_kilobytes(images: torch.Tensor) -> torch.Tensor:
    pixels = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    sizes = []
    for array in pixels:
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(array)).save(buffer, format="JPEG", quality=95)
        sizes.append(buffer.tell() / 1000)
    return torch.tensor(sizes, dtype=torch.float32)
