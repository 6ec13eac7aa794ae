"""digenrl with more than one trainer: three gloo ranks, one generator and two trainers, each trainer owning its
own prompt groups. The trainers' all-reduce over their own pool gives native's gradient (class E1 with staleness
0): the smallest configuration in which that reduction is not a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec, torchrun
from trainer.audit import CLASS_BOUNDS


@pytest.mark.slow
@pytest.mark.parametrize("global_std", [False, True], ids=["group-std", "global-std-gathered-over-trainers"])
def test_two_trainers_reduce_to_native_s_gradient(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, global_std: bool
) -> None:
    # A group per trainer. The clip at 0.5 bites both ways: in a group of 3 the largest advantage is at least
    # 1/sqrt(3) and the smallest at most -1/sqrt(3) (group std, biased or not; unless its rewards are all equal), so a
    # one-sided clip departs from native; and a group's clipped advantages no longer sum to 0, so its loss (at ratio 1,
    # minus their mean) is not the other group's: the step's loss must be both trainers'.
    algorithm = {"prompts_per_step": 2, "group_size": 3, "global_std": global_std, "adv_clip": 0.5}
    spec = audit_spec(resources={"devices": 3}, algorithm=algorithm, executor={"name": "digenrl", "rollout_devices": 1})
    result = torchrun(tmp_path, sfumato_home, spec, "audit", "--executors", "native,digenrl", ranks=3, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") : result.stdout.rindex("}") + 1])
    assert report["world_size"] == 3
    digenrl = report["executors"]["digenrl"]
    assert digenrl["class"] == "E1" and digenrl["verdict"] == "pass"
    assert digenrl["rel_l2"] <= CLASS_BOUNDS["E1"] and digenrl["grad_norm"] > 0
    for key in ("loss", "clip_frac", "kl"):  # both trainers' terms, averaged as native's over every sample
        want = report["native_metrics"][key]
        assert abs(digenrl["metrics"][key] - want) <= CLASS_BOUNDS["E1"] * max(1.0, abs(want)), key
