"""Is an uploaded file really a PNG or WebP of sane size? Checked by magic bytes, then by decoding it."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image

from server.services.errors import FieldErrors, PayloadTooLarge

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ImageInfo:
    extension: str
    media_type: str
    width: int
    height: int


def sniff_format(data: bytes) -> str | None:
    if data.startswith(PNG_MAGIC):
        return "PNG"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def check_image(data: bytes, *, max_bytes: int, max_pixels: int, field: str = "image") -> ImageInfo:
    """The image's type and size, or a 413 (too many bytes) / 422 (not a whole PNG or WebP, too many pixels)."""
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"{field} is larger than {max_bytes} bytes")
    declared = sniff_format(data)
    if declared is None:
        raise FieldErrors.one(field, "not a PNG or WebP image (wrong magic bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[declared])
            width, height = image.size
            if width * height > max_pixels:
                raise FieldErrors.one(field, f"{width}x{height} pixels; the limit is {max_pixels} pixels")
            image.load()  # decode every pixel: a truncated or corrupt file fails here, not in a browser
    except FieldErrors:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise FieldErrors.one(field, f"not a readable {declared} image: {exc}") from exc
    extension = "png" if declared == "PNG" else "webp"
    return ImageInfo(extension, f"image/{extension}", width, height)
