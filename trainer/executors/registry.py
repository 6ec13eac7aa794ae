"""Executor name → class."""

from __future__ import annotations

from trainer.executors.base import Executor
from trainer.executors.native import NativeExecutor
from trainer.job import TrainingJob

EXECUTOR_CLASSES: dict[str, type[Executor]] = {
    "native": NativeExecutor,
}


def make_executor(name: str, job: TrainingJob) -> Executor:
    return EXECUTOR_CLASSES[name](job)
