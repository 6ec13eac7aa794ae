"""No executor reads the host once per sample (issue 27 item 4): the rewards and the advantages stay on the job's
device through the step, and what is logged is read once per step. The step runs on the ``meta`` device with the
reward path included (the spec's rewards scored where the images are, summed by the real ``WeightedReward``): a
host read of a meta tensor is recorded, so a read made per sample or per group is made more often with more samples.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.executors.test_meta_device_step import checked_step, spec_for

REWEIGHT = {"name": "lean_reweight", "kl": "extra_vjp"}
CASES = {
    "per_sample": ({**REWEIGHT, "buffer_regime": "per_sample"}, {"kl_beta": 0.04, "global_std": False}),
    "affine": ({**REWEIGHT, "buffer_regime": "affine"}, {"kl_beta": 0.04, "global_std": False}),
    "affine-global_std": ({**REWEIGHT, "buffer_regime": "affine"}, {"kl_beta": 0.04, "global_std": True}),
}


def host_reads(executor: dict[str, Any], algorithm: dict[str, Any], prompts: int, group: int) -> Counter[str]:
    check, _ = checked_step(spec_for(executor, {**algorithm, "prompts_per_step": prompts, "group_size": group}))
    return Counter(check.host_reads)


@pytest.mark.parametrize("case", list(CASES))
def test_lean_reweight_reads_the_host_as_often_with_three_groups_of_three_as_with_two_of_two(
    sfumato_home: Path, tiny_model_dir: Path, case: str
) -> None:
    executor, algorithm = CASES[case]
    few = host_reads(executor, algorithm, prompts=2, group=2)
    many = host_reads(executor, algorithm, prompts=3, group=3)
    assert many == few
