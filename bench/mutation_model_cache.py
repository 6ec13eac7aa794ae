"""The pytest plugin ``make mutation`` loads: each built-in tiny model is built once per run and copied into
every mutant's temporary SFUMATO_HOME, and the model classes are imported before mutants fork.

mutmut runs each mutant's tests in a new pytest session, whose session fixtures would build the tiny model again
in a fresh interpreter (about 10 s, longer than most mutants' tests take). The build is deterministic (a fixed
seed and fixed configs), so a copy of the first build is the model every session would have built. diffusers,
transformers and peft import their model classes lazily, on the first ``from_pretrained``: imported once in
mutmut's fork server, a mutant's job loads in a tenth of the CPU time (0.3 s instead of 3.4 s). Active only
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
    import_model_classes()


def import_model_classes() -> None:
    """The classes the tiny SD3 job loads (imports only: no thread starts, so forking stays safe)."""
    import peft  # noqa: F401
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel  # noqa: F401
    from transformers import AutoTokenizer, CLIPTextModelWithProjection, T5EncoderModel  # noqa: F401

    import trainer.models.sd3  # noqa: F401


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
