"""A Markdown report (a zip of one folder) is written as that folder's files; a name leaving it is refused."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from sfumato.experiment_client import unpack_report


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_the_folder_s_files_are_written_under_the_chosen_folder(tmp_path: Path) -> None:
    data = zipped({"experiment-3/report.md": b"![x](images/a.png)", "experiment-3/images/a.png": b"png"})
    unpack_report(data, tmp_path / "out")
    assert (tmp_path / "out" / "report.md").read_bytes() == b"![x](images/a.png)"
    assert (tmp_path / "out" / "images" / "a.png").read_bytes() == b"png"


def test_a_name_that_leaves_the_folder_is_refused_and_nothing_is_written_outside(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside its folder"):
        unpack_report(zipped({"experiment-3/../../evil.md": b"x"}), tmp_path / "out")
    assert not (tmp_path / "evil.md").exists() and not (tmp_path.parent / "evil.md").exists()
