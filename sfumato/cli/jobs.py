"""Client commands for jobs: submit (and follow), list, show, logs, cancel, retry, compare, export."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from sfumato import Client, Job
from sfumato.cli.advise import prediction_lines
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
    times,
    when,
)
from sfumato.cli.progress_follower import ProgressFollower
from sfumato.export import Format, write_csv, write_table

MODEL_FORMATS = ("diffusers", "comfyui", "merged")


def _stats(job: Job) -> str:
    return f"reward {number(job.last_reward)}  {number(job.samples_per_s, 3)} samples/s"


class _Follower(ProgressFollower):
    """Shows a job's progress while `wait` polls it: a live bar on a terminal, a line per step otherwise."""

    def __init__(self, job: Job) -> None:
        super().__init__(
            TextColumn("job {task.fields[job_id]} [bold]{task.fields[status]}[/bold]"),
            BarColumn(),
            TextColumn("step {task.completed:.0f}/{task.total:.0f}"),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
        )
        self.task = self.add(job.total_steps, job_id=job.id, status=job.status, stats=_stats(job))

    def update(self, job: Job) -> None:
        line = f"job {job.id} {job.status}  step {steps(job.step, job.total_steps)}  {_stats(job)}"
        self.show(self.task, job.step, job.total_steps, job.status, line, stats=_stats(job))


def _follow(api: Client, job: Job, timeout: float | None) -> Job:
    with _Follower(job) as follower:
        return api.wait(job.id, timeout, interval=1.0, on_update=follower.update)


@client_command
def submit(
    file: Annotated[Path, typer.Argument(help="the job spec, YAML or JSON; ${ENV} and ${ENV:-default} are filled in")],
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="override a field: --set algorithm.group_size=8 (repeatable)")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow the job until it ends, with a progress bar")] = False,
    timeout: Annotated[float | None, typer.Option(help="with --wait: give up after this many seconds")] = None,
    team: Annotated[str | None, typer.Option(help="submit for this one of your teams")] = None,
    as_json: JsonOption = False,
) -> None:
    """Submit a job spec; with --wait, follow it to the end and print its final reward."""
    api = client()
    job = api.submit(file, overrides=overrides or [], team=team)
    if not wait:
        if as_json:
            print_json(job.to_json())
        else:
            out.print(f"job {job.id} ({job.name}) {job.status}", markup=False)
        return
    err.print(f"job {job.id} ({job.name}) submitted: {job.executor} executor, {job.algorithm}", markup=False)
    job = _follow(api, job, timeout)
    if as_json:
        print_json(job.to_json())
    if job.status != "succeeded":
        cause = job.root_cause or job.error
        hint = f" (the full error: sfumato show {job.id})" if job.error and cause != job.error else ""
        raise fail(f"job {job.id} {job.status}" + (f": {cause}{hint}" if cause else ""))
    if not as_json:
        out.print(
            f"job {job.id} succeeded: final reward {number(job.last_reward)} after {job.step} steps "
            f"({number(job.samples_per_s, 3)} samples/s)",
            markup=False,
        )


@client_command
def jobs(
    status: Annotated[str | None, typer.Option(help="one status or several, comma-separated")] = None,
    executor: Annotated[str | None, typer.Option()] = None,
    algorithm: Annotated[str | None, typer.Option()] = None,
    name: Annotated[str | None, typer.Option(help="part of the name")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 20,
    as_json: JsonOption = False,
) -> None:
    """List jobs, newest first."""
    found = client().jobs(status=status, executor=executor, algorithm=algorithm, name=name, limit=limit)
    if as_json:
        print_json([job.to_json() for job in found])
        return
    table = Table(box=None, header_style="bold")
    for column in ("ID", "NAME", "STATUS", "ALGORITHM", "EXECUTOR", "STEP", "REWARD", "SAMPLES/S", "CREATED"):
        table.add_column(column, justify="right" if column in ("ID", "STEP", "REWARD", "SAMPLES/S") else "left")
    for job in found:
        table.add_row(
            str(job.id),
            job.name,
            job.status,
            job.algorithm,
            job.executor,
            steps(job.step, job.total_steps),
            number(job.last_reward),
            number(job.samples_per_s, 3),
            when(job.created_at),
        )
    out.print(table)


@client_command
def show(job_id: Annotated[int, typer.Argument(help="job id")], as_json: JsonOption = False) -> None:
    """A job's status, progress, resources and history."""
    job = client().job(job_id)
    prediction = client().prediction(job_id)
    if as_json:
        print_json({**job.to_json(), "prediction": prediction.to_json() if prediction else None})
        return
    table = Table.grid(padding=(0, 2))
    rows = {
        "job": f"{job.id} {job.name}",
        "status": job.status + (f" ({job.wait_reason})" if job.wait_reason else ""),
        "algorithm / executor": f"{job.algorithm} / {job.executor}",
        "resources": f"{job.nodes} node(s) x {job.devices} {job.device_type}",
        "attempt": job.attempts_summary,
        "step": steps(job.step, job.total_steps),
        "reward": number(job.last_reward),
        "samples/s": number(job.samples_per_s, 3),
        **({"audited cosine": job.audited_cosine.text} if job.audited_cosine else {}),
        "owner / team": f"{job.owner or '-'} / {job.team or '-'}",
        "created": when(job.created_at),
        "finished": when(job.finished_at),
        "duration": duration(job.duration_s),
        "peak memory": size(job.peak_memory_bytes),
    }
    if job.error:
        rows["cause"] = job.root_cause or job.error
        rows["error"] = job.error
    for key, value in rows.items():
        table.add_row(f"[bold]{key}[/bold]", escape(value))
    out.print(table)
    for line in prediction_lines(prediction) if prediction else []:
        out.print(line, markup=False)
    for event in job.events or []:
        out.print(f"  {when(event.created_at)}  {event.status:<10} {event.message or ''}", markup=False)


@client_command
def logs(
    job_id: Annotated[int, typer.Argument(help="job id")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new lines until the job ends")] = False,
    as_json: JsonOption = False,
) -> None:
    """A job's log lines (with -f, followed live); --json prints one JSON object per line."""
    for line in client().logs(job_id, follow=follow):
        if as_json:
            out.out(json.dumps(line.to_json()))
        else:
            out.out(line.text)


@client_command
def cancel(job_id: Annotated[int, typer.Argument(help="job id")]) -> None:
    """Cancel a job: at once when queued, after its trainer stops when running."""
    job = client().cancel(job_id)
    state = "cancel requested" if job.cancel_requested and not job.finished else job.status
    out.print(f"job {job.id}: {state}", markup=False)


@client_command
def retry(job_id: Annotated[int, typer.Argument(help="job id")]) -> None:
    """Queue a failed or cancelled job again."""
    job = client().retry(job_id)
    # What the retry did: the scheduler, woken by it, may have placed the job before the answer was read back.
    out.print(f"job {job.id}: queued again", markup=False)


@client_command
def compare(
    job_ids: Annotated[list[int], typer.Argument(help="job ids (at most 16), e.g. the same spec under each executor")],
    reference: Annotated[
        int | None, typer.Option(help="the job (one of the ids) speedups are over; default: the server's rule")
    ] = None,
    reward: Annotated[
        str | None,
        typer.Option(help="R of the TIME TO R column; default: the final reward of the set's native Flow-GRPO job"),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Executors and methods side by side, as the server computes them (the compare page shows the same answer)."""
    answer = client().compare(job_ids, reference, reward)
    if as_json:
        print_json(answer.to_json())
        return
    table = Table(header_style="bold")
    columns = ("JOB", "NAME", "EXECUTOR", "STATUS", "STEPS", "SAMPLES/S", "SPEEDUP", "AUDITED COSINE", "BOUND",
               "PEAK MEMORY", "FINAL REWARD", "EVAL REWARD", "DURATION", "TIME TO R")  # fmt: skip
    for column in columns:
        left = column in ("NAME", "EXECUTOR", "STATUS", "AUDITED COSINE")
        table.add_column(column, justify="left" if left else "right")
    for row in answer.jobs:
        table.add_row(
            str(row.id),
            row.name,
            row.executor,
            row.status,
            str(row.steps),
            number(row.samples_per_s, 3),
            times(row.speedup),
            row.audited_cosine.text if row.audited_cosine else "—",
            times(row.bound),
            size(row.peak_memory_bytes),
            number(row.final_reward, 3),
            number(row.eval_reward, 3),
            duration(row.duration_s),
            seconds_to_reward(answer.reward_target, row.time_to_reward_s),
        )
    out.print(table)
    err.print(f"samples/s: {answer.definitions.get('samples_per_s', '')}", markup=False)
    if answer.native_job_id is None:
        err.print("no native job among them: no speedup to show", markup=False)
    else:
        err.print(f"{answer.reference} ({answer.reference_reason})", markup=False)
    if answer.reward_target is None:
        err.print(f"time to reward: {answer.reward_target_reason} (--reward)", markup=False)
    else:
        err.print(f"time to reward R = {answer.reward_target:.4g}: {answer.reward_target_reason}", markup=False)
    for row in answer.jobs:
        if row.shared_with:
            others = ", ".join(f"job {s.job_id} on {s.host}" for s in row.shared_with)
            err.print(f"warning: job {row.id} shared a host with {others}: its timing is not its own", markup=False)


def seconds_to_reward(target: float | None, seconds: float | None) -> str:
    """As the compare page shows it: '12.3 s', 'not reached', or '—' without a target."""
    if target is None:
        return "—"
    return "not reached" if seconds is None else f"{seconds:.1f} s"


@client_command
def export(
    job_id: Annotated[int, typer.Argument(help="job id")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="csv or parquet: the job's metrics; diffusers, comfyui or merged: its checkpoint, for other tools",
        ),
    ] = "csv",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="metrics: the file ('-' for CSV on stdout; default job-ID-metrics.*); a model: the folder to "
            "download into (default: the current folder)",
        ),
    ] = None,
    keys: Annotated[str | None, typer.Option(help="metrics: comma-separated metric keys; default all")] = None,
    step: Annotated[
        int | None, typer.Option(help="a model: the checkpoint's step (default: the final model, else the latest)")
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="a model: seconds to wait for the export job")] = None,
) -> None:
    """A job's metrics as a table (csv, parquet), or its checkpoint exported for other tools (diffusers, comfyui,
    merged): an export job runs on a worker, then its result is downloaded."""
    if fmt in MODEL_FORMATS:
        _export_model(job_id, fmt, step, output or Path("."), timeout)
        return
    if fmt not in ("csv", "parquet"):
        raise fail(f"--format must be csv or parquet (metrics) or {', '.join(MODEL_FORMATS)} (a model), not {fmt!r}")
    file_format: Format = "parquet" if fmt == "parquet" else "csv"
    wanted = [k.strip() for k in keys.split(",") if k.strip()] if keys else None
    columns, rows = client().metrics_table(job_id, wanted)
    if not rows:
        raise fail(f"job {job_id} has no metrics yet")
    if str(output) == "-":
        if file_format == "parquet":
            raise fail("parquet cannot go to stdout: give --output FILE")
        write_csv(columns, rows, sys.stdout)
        return
    path = output or Path(f"job-{job_id}-metrics.{file_format}")
    write_table(columns, rows, path, file_format)
    err.print(f"wrote {len(rows)} steps x {len(columns) - 1} metrics to {path}", markup=False)


def _export_model(job_id: int, fmt: str, step: int | None, folder: Path, timeout: float | None) -> None:
    """Queue the export job, follow it, and download the export it registered."""
    api = client()
    queued = api.request_export(job_id, fmt, step=step)
    err.print(f"export job {queued.id} queued: {queued.name}", markup=False)
    finished = _follow(api, queued, timeout)
    if finished.status != "succeeded":
        raise fail(f"export job {finished.id} {finished.status}: {finished.error or 'see sfumato logs'}")
    export = next((e for e in api.exports(job_id) if e.job_id == finished.id), None)
    if export is None or export.artifact is None:
        raise fail(f"export job {finished.id} succeeded but registered no export; see sfumato logs {finished.id}")
    out.print(str(api.download_artifact(finished.id, export.artifact.id, folder)), markup=False)
