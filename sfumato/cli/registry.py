"""`sfumato model register|list|show|alias|download`: the model registry, a team's named models with versions
made from a job's checkpoint, aliases such as `production`, and each version's lineage. A version is written
NAME (its latest), NAME:VERSION or NAME@ALIAS."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from sfumato.cli.common import JsonOption, client, client_command, number, out, print_json, when
from sfumato.model_client import parse_model_ref
from sfumato.registered_models import ModelVersion, RegisteredModel

model_app = typer.Typer(
    no_args_is_help=True,
    help="The model registry: versions made from a job's checkpoint, aliases (candidate, production) and lineage.",
)

TeamOption = Annotated[str | None, typer.Option(help="the model's team, where the name is in several of yours")]
Ref = Annotated[str, typer.Argument(help="NAME (its latest version), NAME:VERSION or NAME@ALIAS")]


def _rewards(version: ModelVersion) -> str:
    lineage = version.lineage
    training = f"training {number(lineage.training_reward)} (reward/mean at step {version.step})"
    evaluation = (
        f"eval {number(lineage.eval_reward)} (eval samples at step {version.step})"
        if lineage.eval_reward is not None
        else "eval - (no eval samples at this step)"
    )
    return f"{training}; {evaluation}"


def lineage_rows(version: ModelVersion) -> dict[str, str]:
    """The version's lineage as label → text, in the order `model show NAME:VERSION` prints it."""
    lineage = version.lineage
    code = f"sfumato {lineage.code_version.package}"
    if lineage.code_version.commit:
        code += f", commit {lineage.code_version.commit}"
    return {
        "version": f"{version.model}:{version.version} (team {version.team})",
        "aliases": ", ".join(version.aliases) or "-",
        "job": f"#{lineage.job.id} {lineage.job.name}",
        "checkpoint": f"step {version.step}" + (f" (artifact {version.artifact_id})" if version.artifact_id else ""),
        "base model": f"{lineage.base_model.family} {lineage.base_model.path}",
        "algorithm": lineage.algorithm,
        "executor": lineage.executor,
        "rewards": _rewards(version),
        "code": code,
        "exports": ", ".join(version.export_formats) or "none",
        "registered": f"{when(version.created_at)} by {version.created_by or '-'}",
    }


def _print_lineage(version: ModelVersion) -> None:
    table = Table.grid(padding=(0, 2))
    for key, value in lineage_rows(version).items():
        table.add_row(f"[bold]{key}[/bold]", escape(value))
    out.print(table)
    out.print("[bold]spec[/bold]")
    out.print(yaml.safe_dump(version.lineage.spec, sort_keys=False).rstrip(), markup=False)


def _print_model(model: RegisteredModel) -> None:
    aliases = ", ".join(f"{a.name} -> {a.version}" for a in model.aliases) or "-"
    out.print(
        f"{model.name} (team {model.team}), created {when(model.created_at)} by {model.created_by or '-'}", markup=False
    )
    if model.description:
        out.print(model.description, markup=False)
    out.print(f"aliases: {aliases}", markup=False)
    table = Table(box=None, header_style="bold")
    for column in (
        "VERSION",
        "STEP",
        "JOB",
        "TRAIN REWARD",
        "EVAL REWARD",
        "ALIASES",
        "EXPORTS",
        "CREATED BY",
        "CREATED",
    ):
        table.add_column(column, justify="right" if column in ("VERSION", "STEP", "JOB") else "left")
    for v in model.versions:
        table.add_row(
            str(v.version),
            str(v.step),
            str(v.lineage.job.id),
            number(v.lineage.training_reward),
            number(v.lineage.eval_reward),
            ", ".join(v.aliases) or "-",
            ", ".join(v.export_formats) or "none",
            v.created_by or "-",
            when(v.created_at),
        )
    out.print(table)


@model_app.command("register")
@client_command
def register(
    job_id: Annotated[int, typer.Argument(help="the job whose checkpoint becomes the version")],
    name: Annotated[str, typer.Option(help="the model; made in the job's team on its first version")],
    step: Annotated[
        int | None, typer.Option(help="the checkpoint's step; default the final model, else the latest")
    ] = None,
    description: Annotated[str | None, typer.Option(help="the model's description (replaces an earlier one)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Register a job's checkpoint as the next version of a model, with its lineage."""
    version = client().register_model(job_id, name, step=step, description=description)
    if as_json:
        print_json(version.to_json())
        return
    out.print(
        f"{version.model}:{version.version} (team {version.team}) from job {job_id} at step {version.step}; "
        f"{_rewards(version)}",
        markup=False,
    )


@model_app.command("list")
@client_command
def list_models(team: TeamOption = None, as_json: JsonOption = False) -> None:
    """Models of your teams, with their latest version and aliases."""
    found = client().models(team=team)
    if as_json:
        print_json([m.to_json() for m in found])
        return
    table = Table(box=None, header_style="bold")
    for column in ("NAME", "TEAM", "LATEST", "ALIASES", "CREATED BY", "CREATED"):
        table.add_column(column, justify="right" if column == "LATEST" else "left")
    for m in found:
        aliases = ", ".join(f"{a.name}->{a.version}" for a in m.aliases) or "-"
        latest = str(m.latest_version) if m.latest_version is not None else "-"
        table.add_row(m.name, m.team, latest, aliases, m.created_by or "-", when(m.created_at))
    out.print(table)


@model_app.command("show")
@client_command
def show(ref: Ref, team: TeamOption = None, as_json: JsonOption = False) -> None:
    """A model with its versions (NAME), or one version's lineage (NAME:VERSION, NAME@ALIAS)."""
    name, number_, alias = parse_model_ref(ref)
    if number_ is None and alias is None:
        model = client().model(name, team=team)
        if as_json:
            print_json(model.to_json())
        else:
            _print_model(model)
        return
    version = client().model_version(ref, team=team)
    if as_json:
        print_json(version.to_json())
    else:
        _print_lineage(version)


@model_app.command("alias")
@client_command
def alias(
    name: Annotated[str, typer.Argument(help="the model")],
    alias_name: Annotated[str, typer.Argument(metavar="ALIAS", help="candidate, production, ...")],
    version: Annotated[int, typer.Argument(min=1, help="the version it points at from now on")],
    team: TeamOption = None,
) -> None:
    """Point an alias at a version, making it or moving it (members and admins; audited)."""
    api = client()
    model = api.model(name, team=team)
    before = next((a.version for a in model.aliases if a.name == alias_name), None)
    moved = api.set_model_alias(name, alias_name, version, team=model.team)
    was = f"version {before}" if before is not None else "none"
    out.print(f"{name}@{moved.name}: {was} -> version {moved.version}", markup=False)


@model_app.command("download")
@client_command
def download(
    ref: Ref,
    export_format: Annotated[
        str | None, typer.Option("--format", help="an export of the version (diffusers, comfyui, merged)")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="the folder to write into")] = Path("."),
    team: TeamOption = None,
) -> None:
    """Download a version's checkpoint, or its export in a format; an interrupted download resumes."""
    api = client()
    found = api.model_download(ref, export_format=export_format, team=team)
    path = api.download_artifact(found.job_id, found.artifact_id, out_dir)
    out.print(f"{ref}: {found.kind} {found.name} of job {found.job_id} at step {found.step} -> {path}", markup=False)
