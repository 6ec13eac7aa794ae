"""`sfumato eval JOB [--step N | --all | --base] --prompts P --reward R`: queue evaluation jobs on a job's checkpoints;
`sfumato eval show JOB [--evaluation ID]`: the evaluations of a training job (a table per checkpoint, and the
reward-hacking alarm), or one evaluation's figures and per-prompt scores."""

from __future__ import annotations

from typing import Annotated, Any

import click
import typer
from rich.table import Table
from typer.core import TyperGroup

from sfumato.cli.common import JsonOption, client, client_command, err, fail, number, out, print_json
from sfumato.evaluation_client import Evaluation

RUN = "run"


class RunByDefault(TyperGroup):
    """`sfumato eval JOB ...` is `sfumato eval run JOB ...`: a first word that is no subcommand starts `run`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [RUN, *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(cls=RunByDefault, no_args_is_help=True, help="Evaluate a job's checkpoints; show the results.")


@eval_app.command(RUN, help="Queue evaluation jobs (the default: `sfumato eval JOB ...`).")
@client_command
def run(
    job_id: Annotated[int, typer.Argument(help="the training job whose checkpoints are evaluated")],
    prompts: Annotated[
        str, typer.Option("--prompts", help="a built-in set (builtin:shapes-heldout) or a .txt/.jsonl file")
    ],
    rewards: Annotated[list[str], typer.Option("--reward", help="a reward to score (repeatable)")],
    step: Annotated[int | None, typer.Option(help="the checkpoint's step (default: the final model)")] = None,
    every: Annotated[bool, typer.Option("--all", help="every checkpoint of the job, one evaluation job each")] = False,
    base: Annotated[bool, typer.Option("--base", help="the job's base model, before training")] = False,
    seeds: Annotated[int, typer.Option(help="samples per prompt (seeds 0..n-1 of the eval stream)")] = 1,
    wait: Annotated[bool, typer.Option("--wait", help="wait until every evaluation has reported")] = False,
    as_json: JsonOption = False,
) -> None:
    api = client()
    queued = api.evaluate(
        job_id, prompts, rewards, step=step, all_checkpoints=every, base_model=base, seeds_per_prompt=seeds
    )
    for job in queued:
        err.print(f"evaluation job {job.id} queued: {job.name}", markup=False)
    if wait:
        for job in queued:
            api.wait(job.id, None, interval=1.0)
    ids = {job.id for job in queued}
    shown = [e for e in api.evaluations(job_id) if e.job_id in ids]
    if as_json:
        print_json([e.to_json() for e in shown])
        return
    out.print(figures_table(shown))
    failed = [e for e in shown if wait and e.status != "succeeded"]
    if failed:
        raise fail(f"evaluation job {failed[0].job_id} {failed[0].status}: see sfumato logs {failed[0].job_id}")


def figures_table(evaluations: list[Evaluation]) -> Table:
    """A row per checkpoint and reward: the figures the platform computed."""
    table = Table(box=None, header_style="bold")
    for column in ("id", "checkpoint", "prompt set", "reward", "mean", "std", "n", "job", "status"):
        table.add_column(column, justify="right" if column in ("mean", "std", "n") else "left")
    for e in evaluations:
        where = "base model" if e.step is None else f"step {e.step}"
        for r in e.rewards or [None]:
            figures = ("-", "-", "-", "-") if r is None else (r.name, number(r.mean), number(r.std), str(r.n))
            table.add_row(str(e.id), where, e.prompt_set, *figures, str(e.job_id), e.status)
    return table


@eval_app.command("show")
@client_command
def show(
    job_id: Annotated[int, typer.Argument(help="the training job")],
    evaluation_id: Annotated[
        int | None, typer.Option("--evaluation", help="one evaluation (the table's id): each prompt's scores")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """A training job's evaluations and reward-hacking alarm, or one evaluation's per-prompt scores."""
    api = client()
    if evaluation_id is not None:
        detail = api.evaluation(evaluation_id)
        if detail.source_job_id != job_id:
            raise fail(f"evaluation {evaluation_id} is not of job {job_id} but of job {detail.source_job_id}")
        if as_json:
            print_json(detail.to_json())
            return
        out.print(figures_table([detail]))
        names = [r.name for r in detail.rewards]
        table = Table(box=None, header_style="bold")
        table.add_column("prompt")
        for name in names:
            table.add_column(name, justify="right")
        for row in detail.prompts:
            table.add_row(row.prompt, *(number(row.scores.get(name)) for name in names))
        out.print(table)
        return
    evaluations, alarm = api.evaluations(job_id), api.reward_hacking(job_id)
    if as_json:
        print_json({"evaluations": [e.to_json() for e in evaluations], "reward_hacking": alarm.to_json()})
        return
    out.print(figures_table(evaluations))
    out.print(alarm_line(alarm.to_json()), markup=False)


def alarm_line(alarm: dict[str, Any]) -> str:
    if not alarm["fired"]:
        return (
            f"reward-hacking alarm: quiet (fires when the training reward rises over {alarm['evaluations']} "
            f"evaluations while a held-out reward falls by more than {alarm['min_drop']:g})"
        )
    return (
        f"reward-hacking alarm: FIRED. The training reward rose by {alarm['training_rise']:.4f} while "
        f"{alarm['series']} fell by {alarm['held_out_drop']:.4f} from step {alarm['first_step']} to "
        f"{alarm['last_step']}"
    )
