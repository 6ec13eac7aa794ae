"""Executor classes by name: each class is named by its options model (trainer/spec/executor.py)."""

from __future__ import annotations

from trainer.executors.base import Executor
from trainer.executors.digenrl import DigenrlExecutor
from trainer.executors.jagg import JaggExecutor
from trainer.executors.jagg_retain import JaggRetainExecutor
from trainer.executors.jagg_reweight import JaggReweightExecutor
from trainer.executors.lean_retain import LeanRetainExecutor
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.executors.native import NativeExecutor
from trainer.job import TrainingJob
from trainer.spec import ExecutorOptions

EXECUTOR_CLASSES: dict[str, type[Executor]] = {
    cls.name: cls
    for cls in (
        NativeExecutor,
        LeanRetainExecutor,
        LeanReweightExecutor,
        JaggExecutor,
        JaggRetainExecutor,
        JaggReweightExecutor,
        DigenrlExecutor,
    )
}


def make_executor(options: ExecutorOptions, job: TrainingJob) -> Executor:
    """A new executor of ``options``' kind for ``job``; the job's spec is not touched."""
    return EXECUTOR_CLASSES[options.name](job, options)
