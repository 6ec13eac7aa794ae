"""``builtin:shapes``: the committed weights of the shapes model, checked and copied into the state folder.

The model (``shapes_build`` makes it) is committed under ``builtin_shapes_model/`` with a
``SHA256SUMS`` file. A job uses a copy in the state folder (``$SFUMATO_HOME/builtin-shapes``): the
copy is used only when every file matches the committed checksums, so a partial or corrupt copy is
replaced, never loaded. The copy is made under a file lock into a staging folder that is checked and
then renamed into place, so two workers installing it at once cannot leave a half-written model.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path

COMMITTED_MODEL = Path(__file__).resolve().parent / "builtin_shapes_model"
CHECKSUM_FILE = "SHA256SUMS"
REBUILD_COMMAND = "python -m trainer.models.shapes_build --out trainer/models/builtin_shapes_model"


class CorruptModelError(RuntimeError):
    """The committed weights themselves fail their checksums (a damaged checkout)."""


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checksum_lines(directory: Path) -> str:
    """``sha256  relative/path`` for every file of the model folder but the checksum file, sorted."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name != CHECKSUM_FILE)
    return "".join(f"{file_digest(p)}  {p.relative_to(directory).as_posix()}\n" for p in files)


def expected_checksums(directory: Path) -> dict[str, str]:
    lines = (directory / CHECKSUM_FILE).read_text().splitlines()
    return {name: digest for digest, name in (line.split("  ", 1) for line in lines if line)}


def matches(directory: Path, expected: dict[str, str]) -> bool:
    """Every expected file is there with its digest (nothing missing, nothing altered)."""
    return all((directory / name).is_file() and file_digest(directory / name) == d for name, d in expected.items())


def default_cache_dir() -> Path:
    home = os.environ.get("SFUMATO_HOME")
    return (Path(home) if home else Path.home() / ".cache" / "sfumato") / "builtin-shapes"


def ensure_builtin_shapes(cache_dir: Path | None = None, source: Path = COMMITTED_MODEL) -> Path:
    """The directory of a verified copy of the shapes model, (re)installing it first when needed."""
    target = cache_dir or default_cache_dir()
    expected = expected_checksums(source)
    if matches(target, expected):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not matches(target, expected):
            staging = target.parent / f".{target.name}.installing-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(source, staging)
            if not matches(staging, expected):
                shutil.rmtree(staging)
                message = f"the builtin:shapes weights in {source} fail {CHECKSUM_FILE}; rebuild: {REBUILD_COMMAND}"
                raise CorruptModelError(message)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
    return target
