"""The trainer's command line and environment: an argument list for `torchrun`, never a shell string."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from server.services.job_runs import RunPlan

# Variables of the worker's own environment a trainer must not inherit: they would point it at
# another job, another server, or other devices.
SCRUBBED_PREFIXES = ("SFUMATO_",)
SCRUBBED_NAMES = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


def torchrun_argv(plan: RunPlan, python: str = sys.executable) -> list[str]:
    """`python -m torch.distributed.run ... -m trainer run --spec ... --output-dir ...` for one node (`probe` in place
    of `run` for the advisor's probe job, `task ... --task FILE` for a task job).

    Nodes may run different numbers of processes (DigenRL's pools on two hosts): torchrun gives each node
    the global ranks after those of the nodes before it."""
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(plan.nnodes),
        "--nproc-per-node",
        str(len(plan.device_indices)),
        "--node-rank",
        str(plan.node_rank),
    ]
    if plan.nnodes == 1:
        argv.append("--standalone")
    else:
        if plan.rendezvous_endpoint is None:
            raise ValueError(f"job {plan.job_id} spans {plan.nnodes} nodes but has no rendezvous endpoint")
        # Static rendezvous on node 0: torchrun's global ranks then follow the scheduler's node ranks (node 0
        # holds rank 0, which alone reports with the job token; DigenRL's rollout pool is node 0). c10d ignores
        # --node-rank and orders nodes by host name and process id.
        argv += [
            "--rdzv-backend",
            "static",
            "--rdzv-endpoint",
            plan.rendezvous_endpoint,
            "--rdzv-id",
            f"sfumato-{plan.job_id}-{plan.attempt}",
        ]
    argv += ["-m", "trainer", plan.command, "--spec", str(plan.spec_path), "--output-dir", str(plan.run_dir)]
    if plan.resume:
        argv.append("--resume")
    if plan.task_path is not None:
        argv += ["--task", str(plan.task_path)]
    return argv


def threads_per_rank(host_devices: int, cpu_count: int | None = None) -> int:
    """Each rank's share of the host's cores (one rank per device or CPU slot), at least one."""
    return max(1, (cpu_count or os.cpu_count() or 1) // max(1, host_devices))


def trainer_env(
    plan: RunPlan, base: Mapping[str, str], *, api_url: str, home: Path, cpu_count: int | None = None
) -> dict[str, str]:
    """The trainer's environment: the worker's own, scrubbed, plus the job's contract variables: node 0 the job
    token (SFUMATO_JOB_TOKEN, for ingestion only), every node the token its remote rewards send
    (SFUMATO_REWARD_TOKEN: node 0's reward token, the other nodes' node token), which only the caller check of
    the job's team's reward services accepts, and only while the attempt runs.

    `home` is the platform's state folder; the trainer caches the built-in tiny model under it.
    """
    env = {k: v for k, v in base.items() if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED_NAMES}
    env.update(
        SFUMATO_API_URL=api_url,
        SFUMATO_JOB_ID=str(plan.job_id),
        SFUMATO_JOB_ATTEMPT=str(plan.attempt),
        SFUMATO_HOME=str(home.resolve()),
        OMP_NUM_THREADS=str(threads_per_rank(plan.host_devices, cpu_count)),
        PYTHONUNBUFFERED="1",
    )
    if plan.token is not None:
        env["SFUMATO_JOB_TOKEN"] = plan.token
    if plan.reward_token is not None:
        env["SFUMATO_REWARD_TOKEN"] = plan.reward_token
    if plan.device_type == "cuda":
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the order the host agent listed the devices in
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in plan.device_indices)
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU job on a GPU host must not touch the GPUs
    return env
