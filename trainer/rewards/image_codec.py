"""Images on the wire of the reward protocol: 8-bit RGB PNG out, PNG or WebP in (docs/rewards.md)."""

from __future__ import annotations

import base64
import binascii
import io

import numpy as np
from PIL import Image

from trainer.spec.reward_protocol import ProtocolError

MAX_IMAGE_PIXELS = 4096 * 4096
IMAGE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"RIFF")  # PNG, WebP (a RIFF container)


def encode_png(pixels: np.ndarray) -> str:
    """One HWC uint8 RGB image as base64 PNG (lossless: the server sees exactly these 8-bit values)."""
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode="RGB").save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_image(data: str, index: int) -> np.ndarray:
    """A base64 PNG or WebP file as HWC uint8 RGB; anything else is a ProtocolError naming ``images[index]``."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError(f"images[{index}]: not base64") from exc
    if not any(raw.startswith(signature) for signature in IMAGE_SIGNATURES):
        raise ProtocolError(f"images[{index}]: not a PNG or WebP file")
    try:
        with Image.open(io.BytesIO(raw), formats=["PNG", "WEBP"]) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise ProtocolError(f"images[{index}]: {image.width}x{image.height} is over {MAX_IMAGE_PIXELS} pixels")
            return np.asarray(image.convert("RGB"))
    except (OSError, Image.DecompressionBombError) as exc:
        raise ProtocolError(f"images[{index}]: does not decode: {exc}") from exc
