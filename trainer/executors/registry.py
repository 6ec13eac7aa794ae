"""Executor name → class."""

from __future__ import annotations

from trainer.executors.base import Executor
from trainer.executors.digenrl import DigenrlExecutor
from trainer.executors.jagg import JaggExecutor
from trainer.executors.lean_retain import LeanRetainExecutor
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.executors.native import NativeExecutor
from trainer.job import TrainingJob

EXECUTOR_CLASSES: dict[str, type[Executor]] = {
    "native": NativeExecutor,
    "lean_retain": LeanRetainExecutor,
    "lean_reweight": LeanReweightExecutor,
    "jagg": JaggExecutor,
    "digenrl": DigenrlExecutor,
}


def make_executor(name: str, job: TrainingJob) -> Executor:
    return EXECUTOR_CLASSES[name](job)
