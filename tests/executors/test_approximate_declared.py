"""The torch-free spec says which executors are class A (the platform shows their audited cosine beside their
speedup); it must say what the trainer's executors declare."""

from __future__ import annotations

from trainer.executors.registry import EXECUTOR_CLASSES
from trainer.spec.executor import OPTION_MODELS


def test_the_spec_marks_approximate_exactly_the_class_a_executors() -> None:
    declared = {name: cls.exactness_class == "A" for name, cls in EXECUTOR_CLASSES.items()}
    assert declared == {name: OPTION_MODELS[name].approximate for name in EXECUTOR_CLASSES}
