"""The executor interface.

An executor turns one :class:`~trainer.layout.SampleBatch` into one (or more) optimizer steps.
The objective is fixed by the algorithm and the reward; the executor decides only the schedule
(docs/executors.md):

1. when the T rollout forwards run and whether with grad (``job.rollout`` runs under the
   caller's grad mode; ``trainer.rollout.denoise_step`` is the single-step building block for
   executors that interleave rollout and training);
2. when each trained step's graph is built, kept and freed (``job.trained_step`` builds one;
   calling ``backward`` frees it);
3. when advantages enter: as the loss weight (``job.trained_step(..., advantages)``) or as a
   scale on a gradient already formed (pass ones, then rescale ``.grad`` yourself);
4. when gradients are reduced across ranks (``job.synchronize_gradients``, once per cycle in
   native) and when the optimizer steps (``job.optimizer_step``, which clips first).

To add an executor: write ``trainer/executors/<name>.py`` with a subclass of :class:`Executor`
whose ``options_model`` is its options model in ``trainer/spec/executor.py`` (which names it),
implement ``train_step`` and list it in ``trainer/executors/registry.py``. Return every metric as
a float in ``StepResult.metrics``: the shared keys (``loss``, ``kl``, ``clip_frac``, ``approx_kl``,
``ratio/mean``, ``grad_norm``, ``time/rollout``, ``time/reward``, ``time/train``, ``time/sync``)
plus any ``executor/*`` of its own. The gradient audit (``trainer/audit.py``) compares a new
executor's gradient, captured after ``synchronize_gradients`` and before ``optimizer_step``, with
native's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from trainer.advantages import Advantages
from trainer.algorithms.base import StepPlan
from trainer.job import Scores, TrainingJob
from trainer.layout import SampleBatch
from trainer.rollout import Trajectory
from trainer.spec import ExecutorOptions


@dataclass
class StepResult:
    metrics: dict[str, float]
    trajectory: Trajectory
    scores: Scores
    advantages: Advantages
    gathered_rewards: torch.Tensor
    extra: dict[str, float] = field(default_factory=dict)


class Executor(ABC):
    options_model: ClassVar[type[ExecutorOptions]]
    name: ClassVar[str]  # the options model's name
    # Which samples each rank holds (trainer/layout.py): the Lean executors need "shared".
    layout: ClassVar[str] = "sharded"
    # In the audit's replay mode (job.replay): whether the executor reads the whole step batch's replay
    # (digenrl's generators roll out every group) rather than its rank's own samples.
    replays_whole_batch: ClassVar[bool] = False
    # The exactness class against native (executors.md §1): "E0" bitwise where the summation order is
    # native's, "E1" equal up to floating-point reassociation, "A" a different gradient estimator.
    exactness_class: ClassVar[str] = "E1"
    # A composed executor's estimator is another executor's (jagg_retain's is jagg's): the audit compares the two
    # too, and they must agree up to summation order (the E1 bound).
    estimator_of: ClassVar[str | None] = None

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.name = cls.options_model.model_fields["name"].default

    def __init__(self, job: TrainingJob, options: ExecutorOptions) -> None:
        if not isinstance(options, self.options_model):
            raise TypeError(f"{type(self).__name__} takes {self.options_model.__name__}, not {type(options).__name__}")
        self.job = job
        self.options = options

    def exactness(self, plan: StepPlan) -> str:
        """The class this executor's gradient belongs to for one step's plan (the audit's bound)."""
        return self.exactness_class

    def training_rank(self) -> int | None:
        """When only some ranks train: the rank holding the synchronised gradient and the optimizer state,
        which the audit reads and checkpoints save (None: every rank has them)."""
        return None

    @abstractmethod
    def train_step(self, batch: SampleBatch) -> StepResult:
        """Roll out, score and train on one step's batch; leave the optimizer stepped."""
