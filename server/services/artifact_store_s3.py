"""The artifact store in an S3-compatible bucket, through boto3 (SFUMATO_ARTIFACT_STORE=s3://bucket/prefix).

Credentials, region and endpoint come from boto3's own configuration (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for MinIO, Ceph, R2, ...). A put is boto3's managed
transfer (multipart above 8 MiB); a read is a ranged GET streamed in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3

READ_CHUNK_BYTES = 1 << 20


class S3ArtifactStore:
    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self._client = client

    @classmethod
    def from_url(cls, url: str) -> S3ArtifactStore:
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        return cls(bucket, prefix.strip("/"), boto3.session.Session().client("s3"))

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, source: Path) -> None:
        self._client.upload_file(str(source), self.bucket, self._key(key))
        source.unlink()

    def read(self, key: str, start: int, end: int) -> Iterator[bytes]:
        if end <= start:
            return
        answer = self._client.get_object(Bucket=self.bucket, Key=self._key(key), Range=f"bytes={start}-{end - 1}")
        yield from answer["Body"].iter_chunks(READ_CHUNK_BYTES)

    def delete(self, key: str) -> None:
        self._client.delete_object(Bucket=self.bucket, Key=self._key(key))
