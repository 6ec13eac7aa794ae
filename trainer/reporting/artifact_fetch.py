"""Fetch another job's artifact from the platform onto this host: for a job (an export, an evaluation, a
playground) that needs a checkpoint the host that trained it holds, and this one does not.

The job token authorises it: a running job may read the artifacts of any job of its own team (404 otherwise, as
for a user). The download resumes a cut-short one (`Range: bytes=<held>-` on `<dest>/.fetch-<job>-<artifact>.part`)
and checks the SHA-256 the server sends before anything appears under its name; a folder artifact arrives as a
tar stream and is unpacked into `<dest>/<name>/`. Standard library only, like the reporter.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import tarfile
from pathlib import Path
from urllib.parse import urlsplit

from trainer.spec.ingest import file_sha256

CHUNK_BYTES = 1 << 20
TIMEOUT_S = 60.0
_FILENAME = re.compile(r'filename="([^"/\\]+)"')


class FetchFailed(Exception):
    """The platform refused the download, or the bytes did not match its SHA-256."""


def fetch_artifact(api_url: str, token: str, job_id: int, artifact_id: int, dest: Path) -> Path:
    """Download artifact `artifact_id` of job `job_id` into the folder `dest`; returns the file, or the unpacked
    folder of a folder artifact (a checkpoint, a model). Raises FetchFailed, or OSError when the platform cannot
    be reached (calling again resumes)."""
    download = f"/api/v1/jobs/{job_id}/artifacts/{artifact_id}/download"
    return fetch_download(api_url, token, download, dest / f".fetch-{job_id}-{artifact_id}.part")


def fetch_download(api_url: str, token: str, download: str, part: Path) -> Path:
    """GET the API path `download` (a download route that sends the checksum headers) into `part`'s folder, as
    fetch_artifact does: resumed, checked, and a tar unpacked into a folder of the download's name."""
    dest = part.parent
    dest.mkdir(parents=True, exist_ok=True)
    url = urlsplit(api_url)
    path = f"{url.path.rstrip('/')}{download}"
    connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    for _ in range(2):  # a resumed file that fails the checksum is fetched again whole, once
        connection = connection_class(url.hostname or "127.0.0.1", url.port, timeout=TIMEOUT_S)
        try:
            name, packing, sha256 = _receive(connection, path, token, part)
        finally:
            connection.close()
        if file_sha256(part) == sha256:
            return _unpacked(part, dest / name, packing)
        part.unlink()
    raise FetchFailed(f"GET {download}: the bytes received did not match sha256 {sha256}")


def _receive(connection: http.client.HTTPConnection, path: str, token: str, part: Path) -> tuple[str, str, str]:
    held = part.stat().st_size if part.exists() else 0
    headers = {"Authorization": f"Bearer {token}", **({"Range": f"bytes={held}-"} if held else {})}
    connection.request("GET", path, headers=headers)
    answer = connection.getresponse()
    if answer.status not in (200, 206, 416):
        raise FetchFailed(f"GET {path}: {answer.status} {answer.read(300).decode(errors='replace')}")
    if answer.status != 416:  # 416: the partial file holds the whole already; the checksum decides
        with part.open("ab" if answer.status == 206 else "wb") as out:
            while chunk := answer.read(CHUNK_BYTES):
                out.write(chunk)
    match = _FILENAME.search(answer.getheader("Content-Disposition", ""))
    name = match.group(1) if match else f"artifact-{path.rsplit('/', 2)[-2]}"
    return name, answer.getheader("X-Sfumato-Packing", "file"), answer.getheader("X-Checksum-Sha256", "")


def _unpacked(part: Path, target: Path, packing: str) -> Path:
    if packing != "tar":
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
