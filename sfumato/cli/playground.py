"""`sfumato playground JOB --prompt P [--seed S] [--step N] [--wait]`: draw prompts x seeds with a job's checkpoint
and with its base model (one playground job on a worker), and print where the grid is."""

from __future__ import annotations

from typing import Annotated

import typer

from sfumato import Client
from sfumato.cli.common import JsonOption, client, client_command, err, fail, out, print_json
from sfumato.playground_client import PlaygroundRun


def run_lines(api: Client, run: PlaygroundRun) -> list[str]:
    sampler = run.sampler
    shift = "" if sampler.shift is None else f", shift {sampler.shift:g}"
    lines = [
        f"playground job {run.job_id} {run.status}: checkpoint of job {run.source_job_id} at step {run.step}, "
        f"{len(run.prompts)} prompts x {len(run.seeds)} seeds (seeds {', '.join(map(str, run.seeds))}), "
        f"{sampler.steps} steps, guidance {sampler.guidance_scale:g}{shift}",
        "columns: base | trained",
    ]
    if run.grid_url is not None:
        lines.append(f"grid: {api.url}{run.grid_url}")
    if run.images_url is not None:
        lines.append(f"images: {api.url}{run.images_url}")
    if run.error:
        lines.append(f"error: {run.error}")
    return lines


@client_command
def playground(
    job_id: Annotated[int, typer.Argument(help="the training job whose checkpoint draws")],
    prompts: Annotated[list[str], typer.Option("--prompt", help="a prompt (repeatable, 1 to 8)")],
    seeds: Annotated[list[int] | None, typer.Option("--seed", help="a seed (repeatable, 1 to 4; default 0)")] = None,
    step: Annotated[int | None, typer.Option(help="the checkpoint's step (default: the final model)")] = None,
    steps: Annotated[int | None, typer.Option(help="sampler steps (default: the job's)")] = None,
    guidance_scale: Annotated[
        float | None, typer.Option("--guidance-scale", help="classifier-free guidance (default: the job's)")
    ] = None,
    shift: Annotated[float | None, typer.Option(help="the sigma grid's shift (default: the job's)")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="wait until the grid is drawn")] = False,
    timeout: Annotated[float | None, typer.Option(help="with --wait: give up after this many seconds")] = None,
    as_json: JsonOption = False,
) -> None:
    """Draw the prompts x seeds with the job's checkpoint and with its base model, side by side."""
    api = client()
    queued = api.playground(
        job_id, prompts, seeds=seeds or [0], step=step, steps=steps, guidance_scale=guidance_scale, shift=shift
    )
    if wait:
        err.print(f"playground job {queued.id} queued; waiting for its grid", markup=False)
        api.wait(queued.id, timeout, interval=1.0)
    run = next(r for r in api.playground_runs(job_id) if r.job_id == queued.id)
    if as_json:
        print_json(run.to_json())
    else:
        out.print("\n".join(run_lines(api, run)), markup=False)
    if wait and run.status != "succeeded":
        raise fail(f"playground job {run.job_id} {run.status}: {run.error or 'see sfumato logs'}")
