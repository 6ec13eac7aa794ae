"""The pytest plugin ``make mutation`` loads: each built-in tiny model is built once per run and copied into
every mutant's temporary SFUMATO_HOME.

mutmut runs each mutant's tests in a new pytest session, whose session fixtures would build the tiny model again
in a fresh interpreter (about 10 s, longer than most mutants' tests take). The build is deterministic (a fixed
seed and fixed configs), so a copy of the first build is the model every session would have built. Active only
when ``SFUMATO_MUTATION_MODEL_CACHE`` names the run's cache folder (bench/mutation.py sets it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

CACHE_ENV = "SFUMATO_MUTATION_MODEL_CACHE"


def pytest_configure(config: pytest.Config) -> None:
    cache = os.environ.get(CACHE_ENV)
    if not cache:
        return
    from trainer.models import builtin_tiny

    build = builtin_tiny.build_in_fresh_process
    if getattr(build, "copies_from", None) is None:  # a forked mutant inherits the parent's patch
        builtin_tiny.build_in_fresh_process = copy_of_first_build(Path(cache), build)


def copy_of_first_build(cache: Path, build: Callable[[Path, str], None]) -> Callable[[Path, str], None]:
    """``build_in_fresh_process`` that builds into ``cache`` once per family and copies from there."""
    from trainer.models.builtin_tiny import is_current

    def copy(directory: Path, family: str) -> None:
        built = cache / family
        if not is_current(built):
            staging = cache / f".{family}.building-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            build(staging, family)
            shutil.rmtree(built, ignore_errors=True)
            staging.rename(built)
        shutil.copytree(built, directory)

    copy.copies_from = cache  # type: ignore[attr-defined]
    return copy
