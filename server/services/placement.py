"""Where a queued job's devices go, given the free devices of a scheduler pass; and why it waits when none fit.

Two kinds of demand:

- plain: `resources.nodes` hosts with `resources.devices` free devices of `resources.gpu_model` each;
- DigenRL pools (`resources.pools`): a rollout pool and a trainer pool, each on one host with its own GPU
  model. Both go on one host when one has room for both (a single-node launch), else each on its own host
  (a two-node launch). Either way the rollout pool's devices come first (node 0, or the first devices of the
  node), so the trainer's ranks [0, rollout devices) are the rollout pool, as the executor expects.

Everything here is pure: the scheduler reads the database, calls these, and writes the allocations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.models import Job
from server.models.host import POOLS
from server.services.hosts import model_matches


@dataclass(frozen=True)
class FreeDevice:
    id: int
    index: int
    model: str


FreeByHost = dict[tuple[int, str], list[FreeDevice]]  # free devices by (host id, device type)
Capacity = Callable[[str, str | None], dict[int, int]]  # matching enabled devices per online host, free or not


@dataclass(frozen=True)
class PlacedNode:
    """One node of a placement: a host and its devices, each with the pool it serves (None without pools)."""

    host_id: int
    devices: list[tuple[FreeDevice, str | None]]


@dataclass(frozen=True)
class PoolDemand:
    name: str
    devices: int
    gpu_model: str | None

    def describe(self, device_type: str) -> str:
        what = f"{self.devices} {device_type} device{'s' if self.devices != 1 else ''}"
        return f"{what} of model {self.gpu_model!r}" if self.gpu_model else what


def pool_demands(job: Job) -> list[PoolDemand] | None:
    """The job's pools, rollout first, or None for a job without pools."""
    pools: dict[str, Any] | None = (job.spec.get("resources") or {}).get("pools")
    if not pools:
        return None
    return [PoolDemand(name, int(pools[name]["devices"]), pools[name].get("gpu_model")) for name in POOLS]


def gpu_model(job: Job) -> str | None:
    return (job.spec.get("resources") or {}).get("gpu_model")


def exclusive(spec: dict[str, Any]) -> bool:
    """`resources.exclusive`: the job holds its hosts whole (see `for_job`)."""
    return bool((spec.get("resources") or {}).get("exclusive"))


def for_job(job: Job, free: FreeByHost, busy_hosts: set[int]) -> FreeByHost:
    """The free devices `job` may take: an exclusive job only those of hosts where no device is in use."""
    if not exclusive(job.spec):
        return free
    return {key: devices for key, devices in free.items() if key[0] not in busy_hosts}


def without_hosts(free: FreeByHost, hosts: set[int]) -> FreeByHost:
    """`free` less every device of `hosts` (hosts an exclusive job holds)."""
    return {key: devices for key, devices in free.items() if key[0] not in hosts}


def _matching(devices: list[FreeDevice], wanted: str | None) -> list[FreeDevice]:
    return [d for d in devices if model_matches(d.model, wanted)]


def _on_host(free: FreeByHost, device_type: str) -> dict[int, list[FreeDevice]]:
    return {host_id: devices for (host_id, kind), devices in free.items() if kind == device_type}


# ---- plain jobs --------------------------------------------------------------------------------------------


def _describe(job: Job) -> str:
    what = f"{job.devices} {job.device_type} device{'s' if job.devices != 1 else ''}"
    wanted = gpu_model(job)
    return f"{what} of model {wanted!r}" if wanted else what


def _place_plain(job: Job, free: FreeByHost) -> list[PlacedNode]:
    """`nodes` hosts with enough free matching devices (best fit first), or [] when the job does not fit."""
    wanted = gpu_model(job)
    hosts = _on_host(free, job.device_type)
    fits = [(host_id, _matching(devices, wanted)) for host_id, devices in hosts.items()]
    fits = [(host_id, matching) for host_id, matching in fits if len(matching) >= job.devices]
    if len(fits) < job.nodes:
        return []
    # Best fit: hosts with the fewest free devices first keep large blocks for large jobs.
    fits.sort(key=lambda fit: (len(hosts[fit[0]]), fit[0]))
    return [
        PlacedNode(host_id, [(d, None) for d in matching[: job.devices]]) for host_id, matching in fits[: job.nodes]
    ]


def _free_matching(free: FreeByHost, device_type: str, wanted: str | None) -> dict[int, int]:
    return {host_id: len(_matching(devices, wanted)) for host_id, devices in _on_host(free, device_type).items()}


def _why_plain_waits(job: Job, free: FreeByHost, capacity: Capacity) -> str:
    need = _describe(job)
    free_per_host = _free_matching(free, job.device_type, gpu_model(job))
    if job.nodes > 1:
        able = sum(1 for count in free_per_host.values() if count >= job.devices)
        return f"needs {job.nodes} hosts with {need} free each; {able} have"
    largest_online = max(capacity(job.device_type, gpu_model(job)).values(), default=0)
    if largest_online < job.devices:
        return f"needs {need}; the largest online host has {largest_online}"
    return f"needs {need}; largest free host has {max(free_per_host.values(), default=0)}"


def _claim_plain(job: Job, free: FreeByHost, capacity: Capacity) -> set[tuple[int, str]]:
    able = [host_id for host_id, count in capacity(job.device_type, gpu_model(job)).items() if count >= job.devices]
    if len(able) < job.nodes:
        return set()
    free_per_host = _free_matching(free, job.device_type, gpu_model(job))
    able.sort(key=lambda host_id: (-free_per_host.get(host_id, 0), host_id))
    return {(host_id, job.device_type) for host_id in able[: job.nodes]}


# ---- DigenRL pools -----------------------------------------------------------------------------------------


def _both_on_one_host(pools: list[PoolDemand], devices: list[FreeDevice]) -> list[tuple[FreeDevice, str | None]]:
    """Disjoint devices for every pool on this host, rollout first; [] when it has no room for both.

    Each pool takes the matching devices the pools after it cannot use first, so a host with some devices that
    fit both models and some that fit one is not spoiled by a greedy early pick."""
    taken: list[tuple[FreeDevice, str | None]] = []
    left = list(devices)
    for position, pool in enumerate(pools):
        later = pools[position + 1 :]
        matching = _matching(left, pool.gpu_model)
        matching.sort(key=lambda d: (any(model_matches(d.model, p.gpu_model) for p in later), d.index))
        if len(matching) < pool.devices:
            return []
        chosen = sorted(matching[: pool.devices], key=lambda d: d.index)
        taken += [(d, pool.name) for d in chosen]
        left = [d for d in left if d not in chosen]
    return taken


def _place_pools(job: Job, pools: list[PoolDemand], free: FreeByHost) -> list[PlacedNode]:
    hosts = _on_host(free, job.device_type)
    by_fit = sorted(hosts, key=lambda host_id: (len(hosts[host_id]), host_id))  # best fit first, as plain jobs
    for host_id in by_fit:
        both = _both_on_one_host(pools, hosts[host_id])
        if both:
            return [PlacedNode(host_id, both)]
    rollout, trainer = pools
    for rollout_host in by_fit:  # rollout first: node 0
        rollout_devices = _matching(hosts[rollout_host], rollout.gpu_model)
        if len(rollout_devices) < rollout.devices:
            continue
        for trainer_host in by_fit:
            trainer_devices = _matching(hosts[trainer_host], trainer.gpu_model)
            if trainer_host != rollout_host and len(trainer_devices) >= trainer.devices:
                return [
                    PlacedNode(rollout_host, [(d, rollout.name) for d in rollout_devices[: rollout.devices]]),
                    PlacedNode(trainer_host, [(d, trainer.name) for d in trainer_devices[: trainer.devices]]),
                ]
    return []


def _why_pools_wait(job: Job, pools: list[PoolDemand], free: FreeByHost, capacity: Capacity) -> str:
    reasons = []
    for pool in pools:
        need = f"{pool.name} pool needs {pool.describe(job.device_type)} on one host"
        largest_online = max(capacity(job.device_type, pool.gpu_model).values(), default=0)
        largest_free = max(_free_matching(free, job.device_type, pool.gpu_model).values(), default=0)
        if largest_online < pool.devices:
            reasons.append(f"{need}; the largest online host has {largest_online}")
        elif largest_free < pool.devices:
            reasons.append(f"{need}; the largest free host has {largest_free}")
    if reasons:
        return "; ".join(reasons)
    return "rollout and trainer pools each fit only on the same host, which has no room for both"


def _claim_pools(job: Job, pools: list[PoolDemand], free: FreeByHost, capacity: Capacity) -> set[tuple[int, str]]:
    claimed: set[tuple[int, str]] = set()
    for pool in pools:
        able = [h for h, count in capacity(job.device_type, pool.gpu_model).items() if count >= pool.devices]
        if not able:
            return set()
        free_per_host = _free_matching(free, job.device_type, pool.gpu_model)
        claimed.add((min(able, key=lambda h: (-free_per_host.get(h, 0), h)), job.device_type))
    return claimed


# ---- what the scheduler calls --------------------------------------------------------------------------------


def place(job: Job, free: FreeByHost) -> list[PlacedNode]:
    """The job's nodes in node-rank order, or [] when it does not fit in `free`."""
    pools = pool_demands(job)
    return _place_pools(job, pools, free) if pools else _place_plain(job, free)


def wait_reason(job: Job, free: FreeByHost, capacity: Capacity) -> str:
    """Why the job does not fit, in words the job page and the hosts page show."""
    pools = pool_demands(job)
    if exclusive(job.spec):
        why = _why_pools_wait(job, pools, free, capacity) if pools else _why_plain_waits(job, free, capacity)
        return f"resources.exclusive: waits for a host with no device in use; {why}"
    return _why_pools_wait(job, pools, free, capacity) if pools else _why_plain_waits(job, free, capacity)


def head_claim(job: Job, free: FreeByHost, capacity: Capacity) -> set[tuple[int, str]]:
    """The hosts the blocked head of the queue will start on once they free up: nothing behind it may take them.

    Without run-time estimates a backfilled job could outlive the head's wait, so backfill uses only the hosts
    the head does not need. Empty when no set of online hosts could ever hold the job.
    """
    pools = pool_demands(job)
    return _claim_pools(job, pools, free, capacity) if pools else _claim_plain(job, free, capacity)
