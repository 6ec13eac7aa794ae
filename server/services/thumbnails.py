"""Small WebP copies of sample images for the galleries, made once and kept beside the sample."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from server.services.artifact_store import write_atomically

THUMB_PX = 192


def thumbnail(path: Path) -> Path:
    """A WebP of at most THUMB_PX a side, cached on disk beside the sample (`.thumbs/<name>.<px>.webp` in the
    sample's folder, so inside the artifact root) and made again when the sample is newer than it."""
    cached = path.parent / ".thumbs" / f"{path.name}.{THUMB_PX}.webp"
    try:
        if cached.stat().st_mtime >= path.stat().st_mtime:
            return cached
    except FileNotFoundError:
        pass
    with Image.open(path) as image:
        image.thumbnail((THUMB_PX, THUMB_PX))
        out = io.BytesIO()
        image.save(out, format="WEBP", quality=80)
    write_atomically(cached, out.getvalue())
    return cached
