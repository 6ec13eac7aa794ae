"""Collectives on the right backend (issue 27 item 2): every collective and point-to-point call an executor
makes carries tensors of a device its process group's backend serves.

On CUDA the trainer's group is ``cpu:gloo,cuda:nccl``: NCCL for device tensors (gradients, weights, the
Flash-GRPO plan) and gloo for the host's (rewards, sample ids, DigenRL's units). The two-rank run records
every call of the gradient audit of all five executors (each takes one step, DigenRL with a generator and a
trainer) under gloo and checks it against the group's own backend map.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.executors.conftest import REPO, audit_spec
from tests.trainer.conftest import write_spec

EXECUTORS = "native,lean_retain,lean_reweight,jagg,digenrl"


def test_the_cuda_process_group_routes_host_tensors_to_gloo_and_device_tensors_to_nccl() -> None:
    from torch.distributed import Backend
    from torch.distributed.distributed_c10d import BackendConfig

    from trainer.distributed import BACKENDS

    assert BackendConfig(Backend(BACKENDS["cuda"])).get_device_backend_map() == {"cpu": "gloo", "cuda": "nccl"}


def test_every_executor_s_collectives_on_two_gloo_ranks_carry_tensors_their_backend_serves(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = write_spec(
        tmp_path / "spec.json", audit_spec(resources={"devices": 2}, executor={"name": "jagg", "group_width": 2})
    )
    log = tmp_path / "collectives.jsonl"
    env = {**os.environ, "SFUMATO_HOME": str(sfumato_home), "SFUMATO_COLLECTIVES_LOG": str(log)}
    env.pop("SFUMATO_API_URL", None)
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command = ["-m", "tests.executors.recording_collectives", "audit", "--spec", str(spec), "--executors", EXECUTORS]
    result = subprocess.run(
        [*launch, *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    calls = [json.loads(line) for rank in (0, 1) for line in Path(f"{log}.{rank}").read_text().splitlines()]
    unserved = [call for call in calls if not set(call["devices"]) <= set(call["served"])]
    assert unserved == []
    # the recording saw the executors' collectives and DigenRL's point-to-point traffic
    assert {"all_gather", "all_reduce", "broadcast", "isend", "send", "recv"} <= {call["call"] for call in calls}
