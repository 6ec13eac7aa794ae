"""Creating an experiment: every cell's spec checked, then every cell queued as a job, in one unit of work.

Nothing is stored unless every cell validates (trainer.spec), some host could run it, and the team's queue
has room for all of them. With fair timing every cell holds its host whole (`resources.exclusive`) on one
device model and the cells are queued in counterbalanced blocks (services.experiment_blocks), so that drift
over time (thermals, other tenants of a host) falls on both sides of every speedup instead of favouring one.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Experiment
from server.schemas.experiments import ExperimentCreate, ExperimentDetail
from server.services import audit
from server.services.auth import Caller, TeamRole
from server.services.capacity import check_capacity, usable_devices
from server.services.errors import FieldErrors
from server.services.experiment_blocks import blocked_order
from server.services.experiment_matrix import Axis, Cell, cell_spec, check_axes, expand
from server.services.experiment_reads import experiment_detail
from server.services.jobs import add_jobs, validate_spec
from server.services.reward_reachability import queue_reward_probes
from server.services.scoping import team_for_submission
from server.services.service_rewards import check_service_rewards
from server.services.submission_limits import check_queue_room
from trainer.spec import JobSpec


def fair_timing_default(axes: list[Axis]) -> bool:
    """On when the matrix sweeps the executor (a field under `executor.`): that is a timing comparison."""
    return any(axis.path.startswith("executor.") for axis in axes)


def fair_device_model(session: Session, base: dict[str, Any]) -> str | None:
    """The device model every cell runs on: the base spec's `resources.gpu_model`, else the model the most
    usable hosts have enough devices of (ties: more devices, then the name); None with no hosts yet."""
    resources = base.get("resources") if isinstance(base.get("resources"), dict) else {}
    if resources.get("gpu_model"):
        return str(resources["gpu_model"])
    device_type, wanted = resources.get("device_type", "cpu"), resources.get("devices", 1)
    wanted = wanted if isinstance(wanted, int) else 1
    device_type = device_type if isinstance(device_type, str) else "cpu"  # the cells' validation says what is wrong
    per_host: dict[tuple[str, int], int] = {}
    for host_id, model in usable_devices(session, device_type):
        per_host[(model, host_id)] = per_host.get((model, host_id), 0) + 1
    ranking: dict[str, tuple[int, int]] = {}
    for (model, _), count in per_host.items():
        hosts, devices = ranking.get(model, (0, 0))
        ranking[model] = (hosts + int(count >= wanted), devices + count)
    if not ranking:
        return None
    return min(ranking, key=lambda m: (-ranking[m][0], -ranking[m][1], m))


def _cell_errors(failures: list[tuple[Cell, dict[str, str]]], cell_count: int) -> list[dict[str, str]]:
    """Each failure as `cells[i].<field>` with the cell named in the message; a problem of the base spec (the
    same field and message in every one of several cells) once, as `spec.<field>`."""
    seen: dict[tuple[str, str], int] = {}
    for _, error in failures:
        seen[(error["field"], error["message"])] = seen.get((error["field"], error["message"]), 0) + 1
    out: list[dict[str, str]] = []
    for cell, error in failures:
        key = (error["field"], error["message"])
        if cell_count > 1 and seen[key] == cell_count:
            if cell.index == 0:
                out.append({"field": f"spec.{error['field']}", "message": f"every cell: {error['message']}"})
            continue
        message = f"cell {cell.index} ({cell.label()}): {error['message']}"
        out.append({"field": f"cells[{cell.index}].{error['field']}", "message": message})
    return out


def _checked_specs(
    session: Session,
    request: ExperimentCreate,
    cells: list[Cell],
    gpu_model: str | None,
    fair: bool,
    settings: Settings,
    team: TeamRole,
) -> list[JobSpec]:
    """Every cell's spec validated and placeable, or one 422 listing each bad cell and field."""
    specs: list[JobSpec] = []
    failures: list[tuple[Cell, dict[str, str]]] = []
    placeable: set[bytes] = set()  # resources, and then rewards, that passed: checked once, not once per cell
    served: set[bytes] = set()
    for cell in cells:
        data = cell_spec(request.spec, cell, request.name)
        if fair:
            resources = data["resources"] = dict(data.get("resources") or {})
            resources["exclusive"] = True
            if gpu_model:
                resources["gpu_model"] = gpu_model
        try:
            spec = validate_spec(data, settings)
            rewards_key = orjson.dumps([reward.model_dump(mode="json") for reward in spec.reward])
            if rewards_key not in served:
                check_service_rewards(session, spec, team.team_id, team.team_name)
                served.add(rewards_key)
            resources_key = orjson.dumps(spec.resources.model_dump(mode="json"))
            if resources_key not in placeable:
                check_capacity(session, spec)
                placeable.add(resources_key)
        except FieldErrors as exc:
            failures += [(cell, error) for error in exc.detail]
            continue
        specs.append(spec)
    if failures:
        raise FieldErrors(_cell_errors(failures, len(cells)))
    return specs


def create_experiment(
    session: Session, caller: Caller, request: ExperimentCreate, settings: Settings, team_name: str | None = None
) -> ExperimentDetail:
    """Expand, check every cell, then store the experiment and one queued job per cell; nothing on any error."""
    team = team_for_submission(caller, team_name)
    axes = [Axis(axis.path, list(axis.values)) for axis in request.axes]
    fair = request.fair_timing if request.fair_timing is not None else fair_timing_default(axes)
    check_axes(axes, fair, settings.max_experiment_cells)
    cells = expand(axes)
    gpu_model = fair_device_model(session, request.spec) if fair else None
    specs = _checked_specs(session, request, cells, gpu_model, fair, settings, team)
    check_queue_room(session, caller.user_id, team.team_id, settings, len(cells))
    order_seed = secrets.randbelow(2**31)
    order = blocked_order(cells, order_seed) if fair else list(range(len(cells)))
    experiment = Experiment(
        name=request.name,
        team_id=team.team_id,
        created_by_id=caller.user_id,
        base_spec=request.spec,
        axes=[{"path": a.path, "values": a.values} for a in axes],
        fair_timing=fair,
        order_seed=order_seed,
        gpu_model=gpu_model if fair else None,
    )
    session.add(experiment)
    session.flush()
    jobs = add_jobs(  # job ids follow the queue order: the scheduler takes equal priorities by id
        session,
        caller,
        [specs[index] for index in order],
        team.team_id,
        [{"experiment_id": experiment.id, "experiment_cell": cells[index].values} for index in order],
    )
    queue_reward_probes(session, jobs, settings)
    detail = f"experiment {experiment.id} {experiment.name!r}: {len(cells)} cells" + (", fair timing" if fair else "")
    audit.record(session, "experiment.create", caller, team_id=team.team_id, detail=detail)
    session.commit()
    return experiment_detail(session, caller, experiment.id)
