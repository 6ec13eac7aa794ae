"""Prompt sets uploaded to the platform: each upload is the next version of its team's dataset, stored with the
SHA-256 its download carries; a malformed row, a missing or broken edit image, a body over the limit and a caller
who may not write are refused with nothing stored; another team's dataset is not found."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dataset_support import module_platform, upload, uploaded
from server_harness import Harness, Headers, png_bytes
from sqlalchemy import func, select

from server.models import AuditEvent, Dataset, DatasetVersion

MAX_DATASET_BYTES = 64_000


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]) -> Iterator[Harness]:
    root = tmp_path_factory.mktemp("datasets")
    yield from module_platform(root, migrated_templates["sqlite"], max_dataset_bytes=MAX_DATASET_BYTES)


@pytest.fixture(scope="module")
def lab(harness: Harness) -> Headers:
    return harness.add_user("lena", "lab", "admin")


@pytest.fixture(scope="module")
def studio(harness: Harness) -> Headers:
    return harness.add_user("sam", "studio", "admin")


def stored_versions(harness: Harness, name: str) -> int:
    with harness.session() as session:
        return (
            session.scalar(select(func.count()).select_from(DatasetVersion).join(Dataset).where(Dataset.name == name))
            or 0
        )


def store_files(harness: Harness) -> list[Path]:
    root = harness.settings.resolved_artifact_root()
    return [p for folder in ("store", "uploads") if (root / folder).exists() for p in (root / folder).rglob("*")]


def refused(response: Any, status: int, field: str, says: str) -> None:
    assert response.status_code == status, response.text
    errors = response.json()["detail"]
    assert any(e["field"] == field and says in e["message"] for e in errors), errors


def test_each_upload_is_the_next_version_and_its_download_has_the_checksum(harness: Harness, lab: Headers) -> None:
    first = uploaded(harness, lab, "captions", "text", b"a cat\na dog\n", test=b"a bird\n")
    second = uploaded(harness, lab, "captions", "text", b"a red cat\n")
    assert (first["version"], second["version"]) == (1, 2)
    assert (first["rows"], second["rows"], first["source"]) == (
        {"train": 2, "test": 1},
        {"train": 1},
        "dataset:captions@1",
    )
    download = harness.client.get("/api/v1/datasets/captions/versions/1/download", headers=lab)
    assert download.status_code == 200
    assert hashlib.sha256(download.content).hexdigest() == first["sha256"] == download.headers["x-checksum-sha256"]
    with tarfile.open(fileobj=io.BytesIO(download.content)) as archive:
        assert archive.getnames() == ["train.txt", "test.txt"]
        assert archive.extractfile("test.txt").read() == b"a bird\n"  # type: ignore[union-attr]
    detail = harness.client.get("/api/v1/datasets/captions", headers=lab).json()
    assert (detail["latest_version"], [v["version"] for v in detail["versions"]]) == (2, [2, 1])
    listed = harness.client.get("/api/v1/datasets", headers=lab).json()["items"]
    assert [(d["name"], d["format"], d["latest_version"]) for d in listed] == [("captions", "text", 2)]


def test_an_upload_is_audited_as_a_team_write(harness: Harness, lab: Headers) -> None:
    uploaded(harness, lab, "audited", "text", b"a cat\n")
    with harness.session() as session:
        events = session.scalars(select(AuditEvent).where(AuditEvent.action == "dataset.upload")).all()
    mine = [e for e in events if str(e.detail).startswith("audited version 1 (text): sha256 ")]
    assert [(e.actor_name, e.team_id is not None) for e in mine] == [("lena", True)]


@pytest.mark.parametrize(
    ("fmt", "train", "field", "says"),
    [
        ("text", b"fine\nab\x01c\n", "train", "line 2, column 3: a control character"),
        ("ocr", b'a sign "Open"\na sign with no text\n', "train", "line 2, column 20: no text in double quotes"),
        ("geneval", b'{"prompt": "a cat", "include": [{"class": "cat", "count": 0}]}', "train", "line 1, column 50"),
        ("edit", b'{"prompt": "make it red", "image": "../x.png"}', "train", "line 1, column 27: 'image'"),
        ("text", b"ok\n\xff\n", "train", "line 2, column 1: not UTF-8 text"),
        ("csv", b"a cat\n", "format", "a format is one of text, geneval, ocr, edit"),
    ],
)
def test_a_malformed_row_is_refused_naming_its_line_and_column_and_nothing_is_stored(
    harness: Harness, lab: Headers, fmt: str, train: bytes, field: str, says: str
) -> None:
    before = store_files(harness)
    refused(upload(harness, lab, "malformed", fmt, train), 422, field, says)
    assert stored_versions(harness, "malformed") == 0 and store_files(harness) == before


def test_a_malformed_test_split_is_refused_naming_the_test_file(harness: Harness, lab: Headers) -> None:
    refused(upload(harness, lab, "split", "ocr", b'a "sign"\n', test=b'"unclosed\n'), 422, "test", "line 1, column 1")


EDIT_ROWS = b'{"prompt": "make it red", "image": "images/cat.png"}\n{"prompt": "add a hat", "image": "dog.jpg"}\n'


def test_an_edit_set_keeps_its_images_and_previews_them(harness: Harness, lab: Headers) -> None:
    cat, dog = png_bytes(16, 16), png_bytes(8, 8, "JPEG")
    version = uploaded(harness, lab, "edits", "edit", EDIT_ROWS, images={"images/cat.png": cat, "dog.jpg": dog})
    assert (version["rows"], version["images"]) == ({"train": 2}, 2)
    preview = harness.client.get("/api/v1/datasets/edits/versions/1/preview", headers=lab).json()
    assert [(r["line"], r["prompt"], r["image"]) for r in preview["rows"]] == [
        (1, "make it red", "images/cat.png"),
        (2, "add a hat", "dog.jpg"),
    ]
    image = harness.client.get(preview["rows"][1]["image_url"], headers=lab)
    assert (image.status_code, image.headers["content-type"], image.content) == (200, "image/jpeg", dog)
    tar = harness.client.get("/api/v1/datasets/edits/versions/1/download", headers=lab).content
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        assert archive.extractfile("images/cat.png").read() == cat  # type: ignore[union-attr]


def test_an_edit_image_sent_without_its_folder_is_matched_by_file_name(harness: Harness, lab: Headers) -> None:
    version = uploaded(
        harness, lab, "by-name", "edit", EDIT_ROWS, images={"cat.png": png_bytes(), "dog.jpg": png_bytes()}
    )
    assert version["images"] == 2


@pytest.mark.parametrize(
    ("images", "says"),
    [
        ({"images/cat.png": png_bytes()}, "line 2: image 'dog.jpg' was not uploaded with the set"),
        (
            {"images/cat.png": b"not a picture", "dog.jpg": png_bytes()},
            "line 1: image 'images/cat.png' is not an image",
        ),
        (
            {"images/cat.png": png_bytes()[:40], "dog.jpg": png_bytes()},
            "line 1: image 'images/cat.png' is not an image",
        ),
    ],
)
def test_an_edit_row_whose_image_is_missing_or_broken_is_refused_naming_the_row(
    harness: Harness, lab: Headers, images: dict[str, bytes], says: str
) -> None:
    before = store_files(harness)
    refused(upload(harness, lab, "broken-edits", "edit", EDIT_ROWS, images=images), 422, "train", says)
    assert stored_versions(harness, "broken-edits") == 0 and store_files(harness) == before


def test_a_body_over_the_limit_is_refused_as_it_arrives_without_a_declared_length(
    harness: Harness, lab: Headers
) -> None:
    boundary = "sfumato-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nhuge\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\ntext\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="train"; filename="train.txt"\r\n\r\n'
    ).encode()

    def body() -> Iterator[bytes]:  # chunked: no Content-Length to trust
        yield head
        for _ in range(MAX_DATASET_BYTES // 1000 + 1):
            yield b"a prompt line that repeats\n" * 40

    headers = {**lab, "Content-Type": f"multipart/form-data; boundary={boundary}"}
    response = harness.client.post("/api/v1/datasets", content=body(), headers=headers)
    assert response.status_code == 413, response.text
    assert stored_versions(harness, "huge") == 0


def test_a_new_version_keeps_the_datasets_format(harness: Harness, lab: Headers) -> None:
    uploaded(harness, lab, "plain", "text", b"a cat\n")
    refused(upload(harness, lab, "plain", "ocr", b'a sign "Open"\n'), 422, "format", "is a 'text' set")


def test_viewers_and_read_only_tokens_cannot_upload(harness: Harness, lab: Headers) -> None:
    viewer = harness.add_user("vera", "lab", "viewer")
    reader = harness.add_user("rhea", "lab", "member", scope="read")
    assert upload(harness, viewer, "viewed", "text", b"a cat\n").status_code == 403
    assert upload(harness, reader, "viewed", "text", b"a cat\n").status_code == 403
    assert stored_versions(harness, "viewed") == 0


@pytest.mark.parametrize(
    "path",
    ["", "/versions", "/versions/1", "/versions/1/preview", "/versions/1/image?row=0", "/versions/1/download"],
)
def test_another_teams_dataset_is_not_found(harness: Harness, lab: Headers, studio: Headers, path: str) -> None:
    uploaded(harness, lab, "private", "edit", b'{"prompt": "p", "image": "a.png"}', images={"a.png": png_bytes()})
    response = harness.client.get(f"/api/v1/datasets/private{path}", headers=studio)
    assert (response.status_code, response.json()["detail"]) == (404, "dataset 'private' not found")
    assert "private" not in [d["name"] for d in harness.client.get("/api/v1/datasets", headers=studio).json()["items"]]
