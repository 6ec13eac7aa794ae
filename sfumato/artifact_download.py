"""Download an artifact's bytes (`GET /api/v1/jobs/{id}/artifacts/{aid}/download`), resuming a cut-short download
with a Range request and checking the SHA-256 the server sends (`X-Checksum-Sha256`) before the file appears.

The bytes arrive in `<dest>/.sfumato-<job>-<artifact>.part`; a later call sends `Range: bytes=<held>-` and appends.
Only a verified file is renamed to its name; a folder artifact (a tar stream) is unpacked into `<dest>/<name>/`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from pathlib import Path

import httpx

from sfumato.errors import ChecksumMismatch, api_error, response_detail

CHUNK_BYTES = 1 << 20
_FILENAME = re.compile(r'filename="([^"/\\]+)"')


def download_artifact_to(http: httpx.Client, path: str, part: Path, dest: Path, *, unpack: bool) -> Path:
    """Fetch `path` into `dest` through the partial file `part`; the file, or the unpacked folder. A resumed file
    that fails the checksum is fetched again whole once; a second mismatch raises ChecksumMismatch."""
    dest.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        name, packing, sha256 = _fetch(http, path, part)
        if _sha256(part) == sha256:
            return _place(part, dest / name, packing, unpack)
        part.unlink()
    raise ChecksumMismatch(f"{path}: the bytes received twice did not match the server's SHA-256 {sha256}")


def _fetch(http: httpx.Client, path: str, part: Path) -> tuple[str, str, str]:
    """Append the bytes `part` lacks; (file name, packing, SHA-256 of the whole) from the answer's headers."""
    held = part.stat().st_size if part.exists() else 0
    with http.stream("GET", path, headers={"Range": f"bytes={held}-"} if held else {}) as answer:
        if answer.status_code not in (200, 206, 416):
            answer.read()
            raise api_error(answer.status_code, response_detail(answer), "GET", path)
        headers = answer.headers
        if answer.status_code != 416:  # 416: `part` holds the whole already (or more: the checksum decides)
            with part.open("ab" if answer.status_code == 206 else "wb") as out:
                for chunk in answer.iter_bytes(CHUNK_BYTES):
                    out.write(chunk)
    match = _FILENAME.search(headers.get("content-disposition", ""))
    name = match.group(1) if match else part.name.removesuffix(".part")
    return name, headers.get("x-sfumato-packing", "file"), headers["x-checksum-sha256"]


def _place(part: Path, target: Path, packing: str, unpack: bool) -> Path:
    if packing != "tar" or not unpack:
        os.replace(part, target)
        return target
    folder = target.with_suffix("")
    staging = folder.with_name(f".{folder.name}.unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(part) as archive:
        archive.extractall(staging, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    part.unlink()
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()
