"""`sfumato dataset upload|list|show` and the client's dataset calls against the real app over HTTP: an upload
prints the version a spec names, an edit set's images are read beside its jsonl and sent with it, a download
unpacks the version checked against its SHA-256, and a bad set is refused in one line naming line and column."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dataset_support import module_platform, served
from server_harness import Harness, png_bytes
from typer.testing import CliRunner

from sfumato import Client
from sfumato.cli import app


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]) -> Iterator[Harness]:
    yield from module_platform(tmp_path_factory.mktemp("dataset-cli"), migrated_templates["sqlite"])


@pytest.fixture(scope="module")
def token(harness: Harness) -> str:
    return harness.add_user("lena", "lab", "admin")["Authorization"].removeprefix("Bearer ")


@pytest.fixture(scope="module")
def live(harness: Harness) -> Iterator[str]:
    yield from served(harness)


def cli(live: str, token: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--url", live, "--token", token, "dataset", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def edit_set(folder: Path) -> Path:
    """An edit set on disk: its jsonl, and the images its rows name beside it."""
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "cat.png").write_bytes(png_bytes(16, 16))
    (folder / "dog.png").write_bytes(png_bytes(8, 8))
    rows = '{"prompt": "make it red", "image": "images/cat.png"}\n{"prompt": "add a hat", "image": "dog.png"}\n'
    (folder / "train.jsonl").write_text(rows)
    return folder / "train.jsonl"


def test_upload_prints_the_version_a_spec_names_and_list_and_show_find_it(
    live: str, token: str, tmp_path: Path
) -> None:
    (tmp_path / "train.txt").write_text("a cat\na dog\n")
    (tmp_path / "test.txt").write_text("a bird\n")
    code, output = cli(
        live, token, "upload", "captions", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt")
    )
    assert code == 0, output
    assert output.startswith("dataset:captions@1 (team lab, text): 2 train, 1 test rows, ")
    code, listed = cli(live, token, "list")
    assert code == 0 and [line.split()[:4] for line in listed.splitlines()[1:]] == [["captions", "lab", "text", "1"]]
    code, shown = cli(live, token, "show", "captions")
    assert code == 0 and shown.splitlines()[2].split()[:4] == ["1", "train", "2,", "test"]
    code, preview = cli(live, token, "show", "captions", "--version", "1")
    assert code == 0 and [line.split()[:3] for line in preview.splitlines()[2:]] == [
        ["1", "a", "cat"],
        ["2", "a", "dog"],
    ]


def test_an_edit_set_goes_up_with_the_images_beside_its_jsonl_and_comes_back_whole(
    live: str, token: str, tmp_path: Path
) -> None:
    jsonl = edit_set(tmp_path / "set")
    code, output = cli(live, token, "upload", "edits", str(jsonl), "--format", "edit")
    assert code == 0, output
    assert "2 train rows, 2 images" in output
    with Client(live, token) as client:
        folder = client.download_dataset("edits", 1, tmp_path / "back")
        preview = client.dataset_preview("edits", 1)
    assert folder == tmp_path / "back" / "edits@1"
    assert (folder / "train.jsonl").read_bytes() == jsonl.read_bytes()
    assert (folder / "images" / "cat.png").read_bytes() == (jsonl.parent / "images" / "cat.png").read_bytes()
    assert [row.image for row in preview.rows] == ["images/cat.png", "dog.png"]


def test_an_edit_image_missing_beside_the_jsonl_is_refused_before_uploading(
    live: str, token: str, tmp_path: Path
) -> None:
    jsonl = edit_set(tmp_path)
    (tmp_path / "dog.png").unlink()
    code, output = cli(live, token, "upload", "lost", str(jsonl), "--format", "edit")
    assert code == 1 and f"the image 'dog.png' is not at {tmp_path / 'dog.png'}" in output


def test_a_malformed_row_is_refused_with_its_line_and_column(live: str, token: str, tmp_path: Path) -> None:
    (tmp_path / "train.txt").write_text('a sign "Open"\na sign with no text\n')
    code, output = cli(live, token, "upload", "signs", str(tmp_path / "train.txt"), "--format", "ocr")
    assert code == 1 and "line 2, column 20: no text in double quotes" in output


def test_an_edit_image_outside_the_jsonls_folder_is_never_read(live: str, token: str, tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(png_bytes())
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "train.jsonl").write_text('{"prompt": "p", "image": "../secret.png"}\n')
    code, output = cli(live, token, "upload", "escape", str(tmp_path / "set" / "train.jsonl"), "--format", "edit")
    assert code == 1 and "the image '../secret.png' is not inside the jsonl's folder" in output
