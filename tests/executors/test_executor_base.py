"""The executor interface (trainer/executors/base.py): each executor class is named by its options model, refuses
another executor's options naming both, and by default reports its class's exactness and trains on every rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec
from trainer.executors.jagg import JaggExecutor
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.executors.native import NativeExecutor
from trainer.executors.registry import EXECUTOR_CLASSES
from trainer.job import TrainingJob
from trainer.layout import SampleBatch, step_batch
from trainer.spec import JaggOptions, LeanReweightOptions, NativeOptions, parse_spec


@pytest.fixture(scope="module")
def job(sfumato_home: Path, tiny_model_dir: Path) -> TrainingJob:
    spec = parse_spec(audit_spec())
    return TrainingJob.build(spec, "shared")


def test_each_executor_class_is_named_by_its_options_model() -> None:
    for name, cls in EXECUTOR_CLASSES.items():
        assert cls.name == name == cls.options_model.model_fields["name"].default


def test_a_new_executor_subclass_takes_its_name_from_its_options_model() -> None:
    """How an executor is added (base.py): the subclass names its options model, and is named by it."""

    class Recounting(NativeExecutor):
        options_model = JaggOptions

    assert Recounting.name == "jagg"


def test_an_executor_refuses_another_executor_s_options_naming_both(job: TrainingJob) -> None:
    with pytest.raises(TypeError, match=r"^NativeExecutor takes NativeOptions, not JaggOptions$"):
        NativeExecutor(job, JaggOptions())


def test_an_executor_keeps_its_job_and_options_and_reports_its_class_s_exactness_on_every_rank(
    job: TrainingJob,
) -> None:
    options = JaggOptions(group_width=2)
    jagg = JaggExecutor(job, options)
    assert jagg.job is job and jagg.options is options
    plan = job.algorithm.plan(job_batch(job), job.dist)
    assert jagg.exactness(plan) == "A" and jagg.training_rank() is None
    assert NativeExecutor(job, NativeOptions()).exactness(plan) == "E0"
    reweight = LeanReweightExecutor(job, LeanReweightOptions())
    try:
        assert reweight.exactness(plan) == "E1"
    finally:
        job.gradient_hooks.remove(reweight.check_order)


def job_batch(job: TrainingJob) -> SampleBatch:
    algo = job.spec.algorithm
    return step_batch(job.prompts, 1, job.spec.seed, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
