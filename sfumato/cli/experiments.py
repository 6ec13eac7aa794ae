"""`sfumato experiment ...`: submit a spec over a matrix of axes (and follow every cell), list, show, cancel,
retry, note, and export the report the server renders (md or html, self-contained)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.progress import BarColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from sfumato import Client, Experiment
from sfumato.cli.common import (
    JsonOption,
    client,
    client_command,
    duration,
    err,
    fail,
    number,
    out,
    print_json,
    size,
    steps,
    when,
)
from sfumato.cli.progress_follower import ProgressFollower

experiment_app = typer.Typer(no_args_is_help=True, help="Experiments: one spec over a matrix of axes, one job per cell")


class _CellFollower(ProgressFollower):
    """A progress bar per cell while the experiment runs (a line per change when not on a terminal)."""

    def __init__(self, experiment: Experiment) -> None:
        super().__init__(
            TextColumn("{task.fields[label]:<40}"),
            TextColumn("job {task.fields[job_id]} [bold]{task.fields[status]:<9}[/bold]"),
            BarColumn(),
            TextColumn("step {task.completed:.0f}/{task.total:.0f}"),
            TimeElapsedColumn(),
        )
        self.tasks: dict[int, TaskID] = {
            cell.job_id: self.add(cell.total_steps, label=cell.label[:40], job_id=cell.job_id, status=cell.status)
            for cell in experiment.cells or []
        }

    def update(self, experiment: Experiment) -> None:
        for cell in experiment.cells or []:
            line = f"{cell.label}: job {cell.job_id} {cell.status}  step {steps(cell.step, cell.total_steps)}"
            self.show(self.tasks[cell.job_id], cell.step, cell.total_steps, cell.status, line)


def _print_summary(experiment: Experiment) -> None:
    summary = experiment.summary
    if summary is None:
        return
    table = Table(header_style="bold")
    columns = ("GROUP", "SEEDS", "SAMPLES/S [95%]", "SPEEDUP [95%]", "PEAK MEMORY [95%]", "FINAL REWARD [95%]",
               "EVAL REWARD [95%]", "TIME TO R, S [95%]")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "GROUP" else "right")

    def interval(value: dict | None, digits: int = 4, shown: Callable[[float], str] | None = None) -> str:
        if not value or value.get("mean") is None:
            return "-"
        show = shown or (lambda v: number(v, digits))
        if value.get("low") is None:
            return f"{show(value['mean'])} (n = {value['n']})"
        return f"{show(value['mean'])} [{show(value['low'])}, {show(value['high'])}]"

    for group in summary.groups:
        table.add_row(
            group["label"],
            str(len(group["job_ids"])),
            interval(group["samples_per_s"]),
            interval(group.get("speedup"), 3) + (f"\n{group['audited_cosine']}" if group.get("audited_cosine") else ""),
            interval(group.get("peak_memory_bytes"), shown=size),
            interval(group["final_reward"]),
            interval(group["eval_reward"]),
            f"{interval(group.get('time_to_reward_s'))} ({group.get('reached_reward', '')})",
        )
    out.print(table)
    target, reason = summary.reward_target, summary.reward_target_reason
    line = f"time to reward R = {target:.4g}: {reason}" if target is not None else f"time to reward: {reason}"
    out.print(line, markup=False)
    for verdict in summary.verdicts:
        out.print(verdict["text"], markup=False)
    for flag in summary.flags:
        err.print(f"warning: {flag['cell']} (job {flag['job_id']}): {flag['problem']}", markup=False)
    for warning in experiment.warnings:
        err.print(f"warning: {warning}", markup=False)


def _follow(api: Client, experiment: Experiment, timeout: float | None) -> Experiment:
    detail = api.experiment_detail(experiment.id)
    with _CellFollower(detail) as follower:
        return api.wait_experiment(experiment.id, timeout, interval=1.0, on_update=follower.update)


@experiment_app.command()
@client_command
def submit(
    file: Annotated[Path, typer.Argument(help="the base job spec, YAML or JSON")],
    axes: Annotated[list[str], typer.Option("--axis", help="PATH=V1,V2,...: a spec field and its values (repeatable)")],
    name: Annotated[str | None, typer.Option(help="the experiment's name; default: the spec's name")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", help="override a base spec field")] = None,
    fair_timing: Annotated[
        bool | None,
        typer.Option(
            "--fair-timing/--no-fair-timing",
            help="exclusive cells, run in counterbalanced blocks of seeds; default: with an executor axis",
        ),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow every cell, then print the summary")] = False,
    timeout: Annotated[float | None, typer.Option(help="with --wait: give up after this many seconds")] = None,
    team: Annotated[str | None, typer.Option(help="one of your teams")] = None,
    as_json: JsonOption = False,
) -> None:
    """Submit a spec over the axes' matrix: one job per combination, all refused if any cell is bad."""
    api = client()
    experiment = api.experiment(file, axes, name=name, fair_timing=fair_timing, overrides=overrides or [], team=team)
    err.print(
        f"experiment {experiment.id} ({experiment.name}): {experiment.cell_count} cells"
        + (", fair timing" if experiment.fair_timing else ""),
        markup=False,
    )
    if not wait:
        for warning in experiment.warnings:
            err.print(f"warning: {warning}", markup=False)
    if wait:
        experiment = _follow(api, experiment, timeout)
    if as_json:
        print_json(experiment.to_json())
    elif wait:
        _print_summary(experiment)
    else:
        out.print(f"experiment {experiment.id} {experiment.state}", markup=False)
    if wait and experiment.state != "succeeded":
        raise fail(f"experiment {experiment.id} {experiment.state}: {experiment.status_counts}")


@experiment_app.command("list")
@client_command
def list_(
    state: Annotated[str | None, typer.Option(help="one state or several, comma-separated")] = None,
    name: Annotated[str | None, typer.Option(help="substring of the name")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    as_json: JsonOption = False,
) -> None:
    """Experiments of your teams, newest first."""
    items = client().experiments(state=state, name=name, limit=limit)
    if as_json:
        print_json([e.to_json() for e in items])
        return
    table = Table(header_style="bold")
    for column in ("ID", "NAME", "STATE", "CELLS", "FAIR", "TEAM", "BY", "CREATED"):
        table.add_column(column)
    for e in items:
        table.add_row(
            str(e.id), e.name, e.state, str(e.cell_count), "yes" if e.fair_timing else "no", e.team or "-",
            e.created_by or "-", when(e.created_at),
        )  # fmt: skip
    out.print(table)


@experiment_app.command()
@client_command
def show(experiment_id: Annotated[int, typer.Argument(help="experiment id")], as_json: JsonOption = False) -> None:
    """The experiment's cells and its summary: intervals per group, a verdict per executor, flagged cells."""
    experiment = client().experiment_detail(experiment_id)
    if as_json:
        print_json(experiment.to_json())
        return
    out.print(f"experiment {experiment.id} {experiment.name}: {experiment.state}", markup=False)
    rows = {row.id: row for row in (experiment.summary.jobs if experiment.summary else [])}
    cells = Table(header_style="bold")
    for column in ("CELL", "JOB", "ORDER", "STATUS", "STEP", "PEAK MEMORY", "DURATION"):
        cells.add_column(column, justify="right" if column in ("PEAK MEMORY", "DURATION") else "left")
    for cell in experiment.cells or []:
        row = rows.get(cell.job_id)  # the cell's compare row: the server's peak memory and duration
        cells.add_row(
            cell.label,
            str(cell.job_id),
            str(cell.position),
            cell.status,
            steps(cell.step, cell.total_steps),
            size(row.peak_memory_bytes if row else None),
            duration(row.duration_s if row else None),
        )
    out.print(cells)
    _print_summary(experiment)


@experiment_app.command()
@client_command
def cancel(experiment_id: Annotated[int, typer.Argument(help="experiment id")]) -> None:
    """Cancel every queued or running cell."""
    experiment = client().cancel_experiment(experiment_id)
    out.print(f"experiment {experiment.id}: {experiment.status_counts}", markup=False)


@experiment_app.command()
@client_command
def retry(experiment_id: Annotated[int, typer.Argument(help="experiment id")]) -> None:
    """Queue the failed cells again."""
    experiment = client().retry_experiment(experiment_id)
    out.print(f"experiment {experiment.id}: failed cells queued again", markup=False)


@experiment_app.command()
@client_command
def note(
    experiment_id: Annotated[int, typer.Argument(help="experiment id")],
    text: Annotated[str, typer.Argument(help="Markdown")],
) -> None:
    """Add a Markdown note to the experiment."""
    added = client().add_experiment_note(experiment_id, text)
    out.print(f"note {added['id']} added to experiment {experiment_id}", markup=False)


@experiment_app.command()
@client_command
def export(
    experiment_id: Annotated[int, typer.Argument(help="experiment id")],
    fmt: Annotated[str, typer.Option("--format", help="md or html")] = "html",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="default experiment-ID.html; for md the folder experiment-ID (a .zip path: the zip)"
        ),
    ] = None,
) -> None:
    """The report: one self-contained HTML page (plots and sample images embedded; nothing fetched when opened),
    or a Markdown folder, report.md beside its images/ (GitHub renders those)."""
    if fmt not in ("md", "html"):
        raise fail(f"--format must be md or html, not {fmt!r}")
    report_format: Literal["md", "html"] = "md" if fmt == "md" else "html"
    path = output or Path(f"experiment-{experiment_id}" + (".html" if fmt == "html" else ""))
    data = client().export_experiment(experiment_id, report_format, path)
    if fmt == "md" and path.suffix != ".zip":
        err.print(f"wrote {path / 'report.md'} and its images under {path / 'images'}", markup=False)
    else:
        err.print(f"wrote {len(data)} bytes to {path}", markup=False)
