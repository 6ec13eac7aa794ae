"""`sfumato advise SPEC`: which executor to run a spec with, from a probe on the target host class."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sfumato.cli.common import JsonOption, client, client_command, err, fail, number, out, print_json, size, times
from sfumato.models import Advice


def advice_table(advice: Advice) -> Table:
    table = Table(header_style="bold")
    for column in ("", "EXECUTOR", "SAMPLES/S", "SPEEDUP", "PEAK MEMORY", "FITS", "CLASS", "REASON"):
        table.add_column(column, justify="left" if column in ("EXECUTOR", "CLASS", "REASON") else "right")
    for row in advice.answer.executors if advice.answer else []:
        table.add_row(
            "*" if row.recommended else "",
            row.executor,
            number(row.samples_per_s, 3),
            times(row.speedup),
            size(row.peak_memory_bytes),
            "yes" if row.fits_budget else "no",
            row.exactness or "-",
            row.reason,
        )
    return table


@client_command
def advise(
    file: Annotated[Path, typer.Argument(help="the job spec, YAML or JSON")],
    memory_budget: Annotated[str | None, typer.Option(help="per device, e.g. 40GiB or 512MiB")] = None,
    host_class: Annotated[str | None, typer.Option(help="cpu or cuda (default: the spec's device type)")] = None,
    submit: Annotated[bool, typer.Option("--submit", help="submit the spec with the recommended executor")] = False,
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
    if as_json:
        print_json({**advice.to_json(), "submitted_job": job.to_json() if job else None})
        return
    out.print(advice_table(advice))
    out.print(advice.answer.summary, markup=False)
    if job is not None:
        out.print(f"job {job.id} ({job.name}) {job.status} with {job.executor}", markup=False)
