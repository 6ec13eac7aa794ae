"""`sfumato service create|list|show|stop`: reward services a team's jobs share."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from sfumato.cli.common import JsonOption, client, client_command, number, out, print_json, when
from sfumato.reward_services import RewardService

service_app = typer.Typer(
    no_args_is_help=True, help="Reward services: reward servers the platform runs and a team's jobs share."
)


def _latency(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def _where(service: RewardService) -> str:
    if not service.host:
        return "-"
    return f"{service.host} [{','.join(str(i) for i in service.device_indices)}]"


@service_app.command("create")
@client_command
def create(
    name: Annotated[str, typer.Argument(help="unique among the team's live services; jobs use it by this name")],
    reward: Annotated[str, typer.Option(help="the reward to serve: a built-in name or a plugin's")],
    path: Annotated[str | None, typer.Option(help="the weights directory of a model-based reward")] = None,
    devices: Annotated[int, typer.Option(min=1, max=64, help="devices it holds, on one host")] = 1,
    device_type: Annotated[
        str | None, typer.Option(help="cuda or cpu; omitted: one that an online host offers (the server chooses)")
    ] = None,
    team: Annotated[str | None, typer.Option(help="for this one of your teams")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a reward service; the platform places it like a job and starts it."""
    service = client().create_service(name, reward, path=path, devices=devices, device_type=device_type, team=team)
    if as_json:
        print_json(service.to_json())
        return
    out.print(
        f"service {service.id} ({service.name}) {service.state} on {service.devices} {service.device_type} device(s)",
        markup=False,
    )
    out.print(f'jobs use it with {{"name": "service", "service": "{service.name}"}} in their reward list', markup=False)


@service_app.command("list")
@client_command
def list_services(
    live: Annotated[bool, typer.Option("--live", help="only services not stopped or failed")] = False,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    as_json: JsonOption = False,
) -> None:
    """Reward services of your teams, newest first, with their figures."""
    found = client().services(live=live, limit=limit)
    if as_json:
        print_json([service.to_json() for service in found])
        return
    table = Table(box=None, header_style="bold")
    numeric = ("ID", "REQ/S", "P50", "P99", "REQUESTS", "ERRORS", "JOBS")
    for column in (
        "ID",
        "NAME",
        "TEAM",
        "REWARD",
        "STATE",
        "HOST",
        "REQ/S",
        "P50",
        "P99",
        "REQUESTS",
        "ERRORS",
        "JOBS",
    ):
        table.add_column(column, justify="right" if column in numeric else "left")
    for s in found:
        f = s.figures
        table.add_row(
            str(s.id),
            s.name,
            s.team or "-",
            s.reward,
            s.state,
            _where(s),
            number(f.request_rate, 3),
            _latency(f.latency_p50_s),
            _latency(f.latency_p99_s),
            number(f.requests, 12),
            number(f.errors, 12),
            str(len(s.jobs)),
        )
    out.print(table)


@service_app.command("show")
@client_command
def show(service_id: Annotated[int, typer.Argument(help="service id")], as_json: JsonOption = False) -> None:
    """A service's state, host and devices, URL, figures and the jobs using it."""
    s = client().service(service_id)
    if as_json:
        print_json(s.to_json())
        return
    f = s.figures
    rows = {
        "service": f"{s.id} {s.name}",
        "state": s.state + (f" ({s.wait_reason})" if s.wait_reason else ""),
        "reward": s.reward + (f" from {s.path}" if s.path else ""),
        "devices": f"{s.devices} {s.device_type} on {_where(s)}",
        "url": s.url or "-",
        "restarts": str(s.restarts),
        "requests": f"{number(f.requests, 12)} ({number(f.request_rate, 3)}/s), {number(f.errors, 12)} errors",
        "images": f"{number(f.images, 12)} ({number(f.images_per_s, 3)}/s)",
        "latency p50 / p99": f"{_latency(f.latency_p50_s)} / {_latency(f.latency_p99_s)}",
        "last healthy": when(s.last_health_at),
        "team / created by": f"{s.team or '-'} / {s.created_by or '-'}",
        "created": when(s.created_at),
        "jobs": ", ".join(f"{j.id} {j.name} ({j.status})" for j in s.jobs) or "-",
    }
    if s.error:
        rows["error"] = s.error
    table = Table.grid(padding=(0, 2))
    for key, value in rows.items():
        table.add_row(f"[bold]{key}[/bold]", escape(value))
    out.print(table)


@service_app.command("stop")
@client_command
def stop(service_id: Annotated[int, typer.Argument(help="service id")]) -> None:
    """Stop a service: at once when pending, after its server exits when placed."""
    service = client().stop_service(service_id)
    out.print(f"service {service.id} ({service.name}): {service.state}", markup=False)
