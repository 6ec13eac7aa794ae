"""lean_retain's (and jagg_retain's) default ``max_retained_graphs`` under ``resources.memory_budget``
(docs/memory-and-timing.md).

The rule: the most sample-step graphs whose retained bytes fit what the budget leaves beside the rest of the step,
``(budget − (peak − retained bytes)) // bytes per graph``, from the first measured step (trainer/step_memory.py:
its ``memory/retained_graphs`` over the graphs it kept, and its peak). Without a budget there is no limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer.step_memory import StepMemory


@dataclass(frozen=True)
class RetainedGraphBudget:
    budget: int  # bytes the device may hold (resources.memory_budget)
    peak: int  # the measured step's peak
    retained_bytes: int  # what its kept graphs held (memory/retained_graphs)
    graphs: int  # how many sample-step graphs it kept

    @classmethod
    def measured(cls, budget: int, memory: StepMemory, graphs: int) -> RetainedGraphBudget:
        return cls(budget, memory.peak, memory.retained_graphs, graphs)

    @property
    def per_graph(self) -> float:
        return self.retained_bytes / self.graphs

    def graphs_that_fit(self) -> int:
        """The most graphs whose bytes fit the budget beside everything else the step held. In integers: the
        float ``room // per_graph`` floors a budget of exactly the measured peak to one graph fewer than it kept
        for a third of byte counts (1001 bytes over 12 graphs: 11)."""
        room = self.budget - (self.peak - self.retained_bytes)
        if room <= 0:
            return 0
        return room * self.graphs // self.retained_bytes

    def sentence(self, wanted: int, executor: str) -> str:
        return (
            f"{executor} keeps {wanted} sample-step graphs of {self.per_graph / 2**20:.2f} MiB each (measured on the "
            f"first step); the {self.budget / 2**20:.1f} MiB budget leaves room for {self.graphs_that_fit()} beside "
            f"the step's other {(self.peak - self.retained_bytes) / 2**20:.1f} MiB"
        )
