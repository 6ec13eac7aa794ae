"""Under FSDP full fine-tuning the KL reference is sharded like the policy (issue 27 item 4): on two gloo ranks
(real torchrun) each rank holds its shard of every reference weight, placed as the policy's and equal to it at
set-up, and no rank holds an unsharded copy, before or after a step whose KL forward gathered the units."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import REPO, write_spec

RANKS = 2


def test_under_fsdp_each_rank_holds_its_shard_of_the_reference_as_of_the_policy(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = audit_spec(
        model={"sharding": "fsdp"}, algorithm={"kl_beta": 0.04, "group_size": 2}, resources={"devices": RANKS}
    )
    out = tmp_path / "reference.json"
    env = {**os.environ, "SFUMATO_HOME": str(sfumato_home)}
    env.pop("SFUMATO_API_URL", None)
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(RANKS)]
    command = ["-m", "tests.trainer.reference_shards", "--spec", str(write_spec(tmp_path / "spec.json", spec))]
    result = subprocess.run(
        [*launch, *command, "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    reports = [json.loads(Path(f"{out}.{rank}").read_text()) for rank in range(RANKS)]
    for report in reports:
        assert report["sharding"] == "fsdp"
        reference, policy = report["set_up"]["reference"], report["set_up"]["policy"]
        assert reference == policy  # the same placements, local shapes and full shapes
        assert all(held["placements"] == ["S(0)"] for held in reference.values())
        assert report["after_step"] == reference  # the KL forward's gathers resharded
        assert all(report["equal_to_policy_shard"])
        assert report["kl"] == 0.0  # the first step's policy is the reference
    for name, held in reports[0]["set_up"]["reference"].items():
        rows = [report["set_up"]["reference"][name]["local"][0] for report in reports]
        assert sum(rows) == held["full"][0], name  # the ranks' shards tile the weight, none holds it whole
    full, buffers = reports[0]["full_bytes"], reports[0]["buffer_bytes"]
    assert sum(report["memory_reference"] - buffers for report in reports) == full  # buffers are each rank's own
    assert all(report["memory_reference"] - buffers < 0.6 * full for report in reports)
