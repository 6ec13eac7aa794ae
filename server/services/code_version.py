"""The platform's code version, recorded in a model version's lineage: the sfumato package's version and, when the
server runs from a git checkout, the checkout's commit. Read once per process (the code does not change under a
running server)."""

from __future__ import annotations

import functools
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from server.schemas.model_registry import CodeVersion

# The folder holding server/, sfumato/ and trainer/: a checkout's root when the server runs from one.
SOURCE_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def code_version() -> CodeVersion:
    try:
        package = version("sfumato")
    except PackageNotFoundError:
        package = "unknown"
    return CodeVersion(package=package, commit=_checkout_commit(SOURCE_ROOT))


def _checkout_commit(root: Path) -> str | None:
    """HEAD of the checkout at `root`; None where `root` is no checkout's root (an installed package) or git is
    missing. Changes not committed are not recorded."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None
