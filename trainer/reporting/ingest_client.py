"""The reporter's HTTP client: keep-alive requests to the job's ingestion endpoints over http.client.

The reporter's thread sends a few small requests a second for as long as training runs, on the
same cores as the training loop; httpx spends about a millisecond of CPU on each, the standard
library a fraction of that. Errors are the caller's to retry: a dropped connection is reopened
on the next request.
"""

from __future__ import annotations

import http.client
import secrets
from urllib.parse import urlsplit

TransportError = (OSError, http.client.HTTPException)


class IngestClient:
    def __init__(self, base_url: str, token: str | None, timeout_s: float) -> None:
        url = urlsplit(base_url)
        self._connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        self._host, self._port = url.hostname or "127.0.0.1", url.port
        self._prefix = url.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout_s = timeout_s
        self._connection: http.client.HTTPConnection | None = None

    def post_json(self, path: str, body: bytes) -> tuple[int, bytes]:
        return self._post(path, body, "application/json")

    def post_form(
        self, path: str, fields: dict[str, str], file_field: str, filename: str, data: bytes, data_type: str
    ) -> tuple[int, bytes]:
        """A multipart/form-data POST: text fields and one file."""
        boundary = secrets.token_hex(16)
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
            for name, value in fields.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{filename}"\r\n'
            f"Content-Type: {data_type}\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
        parts.append(f"--{boundary}--\r\n".encode())
        return self._post(path, b"".join(parts), f"multipart/form-data; boundary={boundary}")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, response headers with lowercase names, body) of a request on the job's endpoints (the artifact
        upload's HEAD and PATCH among them). A kept-alive connection the server has closed meanwhile is retried
        once on a new one; a server that cannot be reached raises one of TransportError."""
        headers = {**self._headers, **(headers or {})}
        reused = self._connection is not None
        try:
            return self._exchange(method, path, body, headers)
        except TransportError:
            if not reused:
                raise
        return self._exchange(method, path, body, headers)

    def _post(self, path: str, body: bytes, content_type: str) -> tuple[int, bytes]:
        status, _, answer = self.request("POST", path, body, {"Content-Type": content_type})
        return status, answer

    def _exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        if self._connection is None:
            self._connection = self._connection_class(self._host, self._port, timeout=self._timeout_s)
        try:
            self._connection.request(method, self._prefix + path, body, headers)
            response = self._connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        except TransportError:
            self.close()
            raise
