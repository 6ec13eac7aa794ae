"""`sfumato advise SPEC`: which executor to run a spec with, from a probe on the target host class; `sfumato advice
ID`: an advice's answer again, and "Submit with …" (`--submit EXECUTOR`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sfumato.cli.common import JsonOption, client, client_command, err, fail, number, out, print_json, size, times
from sfumato.models import Advice, Bounds, Job, PredictionCheck


def bounds_text(interval: Bounds | None, digits: int) -> str:
    return "" if interval is None else f" [{number(interval.low, digits)}, {number(interval.high, digits)}]"


def speedup_text(interval: Bounds | None) -> str:
    return "" if interval is None else f" [{interval.low:.2f}, {interval.high:.2f}]"


def advice_table(advice: Advice) -> Table:
    table = Table(header_style="bold")
    for column in ("", "EXECUTOR", "SAMPLES/S [95%]", "SPEEDUP [95%]", "PEAK MEMORY", "FITS", "CLASS", "REASON"):
        table.add_column(column, justify="left" if column in ("EXECUTOR", "CLASS", "REASON") else "right")
    for row in advice.answer.executors if advice.answer else []:
        table.add_row(
            "*" if row.recommended else "",
            row.executor,
            number(row.samples_per_s, 3) + bounds_text(row.samples_per_s_interval, 3),
            times(row.speedup) + ("" if row.executor == "native" else speedup_text(row.speedup_interval)),
            size(row.peak_memory_bytes),
            "yes" if row.fits_budget else "no",
            row.exactness or "-",
            row.reason,
        )
    return table


def prediction_lines(check: PredictionCheck) -> list[str]:
    """A job from an advice: predicted against measured, and the warning when they are not like with like."""
    lines = [
        f"predicted {number(check.predicted_samples_per_s, 3)}{bounds_text(check.predicted_samples_per_s_interval, 3)}"
        f" samples/s, {size(check.predicted_peak_memory_bytes)} (advice {check.advice_id}); measured "
        f"{number(check.measured_samples_per_s, 3)} samples/s, {size(check.measured_peak_memory_bytes)}"
    ]
    if check.shared_warning:
        lines.append(f"warning: not like with like: {check.shared_warning}")
    return lines


def print_advice(advice: Advice, job: Job | None, as_json: bool) -> None:
    if as_json:
        print_json({**advice.to_json(), "submitted_job": job.to_json() if job else None})
        return
    out.print(advice_table(advice))
    if advice.answer is not None:
        out.print(advice.answer.summary, markup=False)
        out.print(f"intervals: 95% over {advice.answer.rounds} timed rounds", markup=False)
    if advice.probe_warning:
        out.print(f"warning: {advice.probe_warning}", markup=False)
    for check in advice.submitted:
        for line in prediction_lines(check):
            out.print(f"job {check.job_id} ({check.executor}): {line}", markup=False)
    if job is not None:
        out.print(f"job {job.id} ({job.name}) {job.status} with {job.executor}, exclusive", markup=False)


@client_command
def advise(
    file: Annotated[Path, typer.Argument(help="the job spec, YAML or JSON")],
    memory_budget: Annotated[str | None, typer.Option(help="per device, e.g. 40GiB or 512MiB")] = None,
    host_class: Annotated[str | None, typer.Option(help="cpu or cuda (default: the spec's device type)")] = None,
    submit: Annotated[
        bool, typer.Option("--submit", help="submit the spec with the recommended executor, exclusive")
    ] = False,
    timeout: Annotated[float | None, typer.Option(help="give up waiting for the probe after this many seconds")] = None,
    team: Annotated[str | None, typer.Option(help="one of your teams")] = None,
    as_json: JsonOption = False,
) -> None:
    """Probe every executor on the host class, then print each one's predicted samples/s and peak memory."""
    api = client()
    advice = api.advise(file, memory_budget=memory_budget, host_class=host_class, team=team)
    err.print(f"advice {advice.id}: probing on {advice.host_class} (probe job {advice.probe_job_id})", markup=False)
    advice = api.wait_advice(advice.id, timeout)
    if advice.state != "answered" or advice.answer is None:
        raise fail(f"advice {advice.id} {advice.state}" + (f": {advice.error}" if advice.error else ""))
    job = None
    if submit:
        if advice.answer.recommended is None:
            raise fail(f"nothing submitted: {advice.answer.summary}")
        job = api.submit_from_advice(advice.id, advice.answer.recommended, team=team)
    print_advice(advice, job, as_json)


@client_command
def advice(
    advice_id: Annotated[int, typer.Argument(help="advice id")],
    submit: Annotated[
        str | None, typer.Option("--submit", help="submit the advised spec with this executor, exclusive")
    ] = None,
    team: Annotated[str | None, typer.Option(help="one of your teams")] = None,
    as_json: JsonOption = False,
) -> None:
    """An advice's answer (its intervals, the recommendation and why), and the jobs submitted from it."""
    api = client()
    job = api.submit_from_advice(advice_id, submit, team=team) if submit else None
    print_advice(api.advice(advice_id), job, as_json)
