"""`sfumato dataset upload|list|show`: a team's prompt sets on the platform, each upload the next version of its
dataset; a spec names one as `dataset:NAME[@VERSION][:test]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sfumato.cli.common import JsonOption, client, client_command, out, print_json, size, when
from sfumato.dataset_models import Dataset, DatasetPreview

dataset_app = typer.Typer(
    no_args_is_help=True,
    help="Prompt sets on the platform (text, geneval, ocr, edit), versioned; a spec names one as dataset:NAME.",
)

TeamOption = Annotated[str | None, typer.Option(help="the dataset's team, where you are in several")]
FORMATS = ("text", "geneval", "ocr", "edit")


@dataset_app.command("upload")
@client_command
def upload(
    name: Annotated[str, typer.Argument(help="the dataset; made in your team on its first version")],
    train: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="the train split's file")],
    format: Annotated[
        str, typer.Option("--format", help="text (flow_grpo's train.txt), geneval (metadata.jsonl), ocr, edit")
    ] = "text",
    test: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="the test split's file (eval prompts)")
    ] = None,
    team: TeamOption = None,
    as_json: JsonOption = False,
) -> None:
    """Upload a prompt set as the next version of a dataset (an edit set's images, named by its rows relative to
    the jsonl's folder, go with it)."""
    if format not in FORMATS:
        raise typer.BadParameter(f"{format!r}: one of {', '.join(FORMATS)}", param_hint="--format")
    version = client().upload_dataset(name, format, train, test=test, team=team)
    if as_json:
        print_json(version.to_json())
        return
    rows = ", ".join(f"{count} {split}" for split, count in version.rows.items())
    images = f", {version.images} images" if version.images else ""
    out.print(
        f"{version.source} (team {version.team}, {version.format}): {rows} rows{images}, {size(version.size_bytes)}, "
        f"sha256 {version.sha256}",
        markup=False,
    )


@dataset_app.command("list")
@client_command
def list_datasets(team: TeamOption = None, as_json: JsonOption = False) -> None:
    """Datasets of your teams, with their latest version."""
    found = client().datasets(team=team)
    if as_json:
        print_json([d.to_json() for d in found])
        return
    table = Table(box=None, header_style="bold")
    for column in ("NAME", "TEAM", "FORMAT", "LATEST", "CREATED BY", "CREATED"):
        table.add_column(column, justify="right" if column == "LATEST" else "left")
    for d in found:
        latest = str(d.latest_version) if d.latest_version is not None else "-"
        table.add_row(d.name, d.team, d.format, latest, d.created_by or "-", when(d.created_at))
    out.print(table)


def _print_dataset(dataset: Dataset) -> None:
    out.print(
        f"{dataset.name} (team {dataset.team}, {dataset.format}), created {when(dataset.created_at)} by "
        f"{dataset.created_by or '-'}",
        markup=False,
    )
    table = Table(box=None, header_style="bold")
    for column in ("VERSION", "ROWS", "IMAGES", "SIZE", "SHA256", "UPLOADED BY", "UPLOADED"):
        table.add_column(column, justify="right" if column in ("VERSION", "IMAGES", "SIZE") else "left")
    for v in dataset.versions:
        rows = ", ".join(f"{split} {count}" for split, count in v.rows.items())
        table.add_row(
            str(v.version),
            rows,
            str(v.images),
            size(v.size_bytes),
            v.sha256[:12],
            v.created_by or "-",
            when(v.created_at),
        )
    out.print(table)


def _print_preview(preview: DatasetPreview) -> None:
    out.print(f"{preview.dataset}@{preview.version} ({preview.format}): the first train rows", markup=False)
    table = Table(box=None, header_style="bold")
    for column in ("LINE", "PROMPT", "IMAGE" if preview.format == "edit" else "METADATA"):
        table.add_column(column, justify="right" if column == "LINE" else "left")
    for row in preview.rows:
        extra = row.image if preview.format == "edit" else (str(row.metadata) if row.metadata else "")
        table.add_row(str(row.line), row.prompt, extra or "")
    out.print(table)


@dataset_app.command("show")
@client_command
def show(
    name: Annotated[str, typer.Argument(help="the dataset")],
    version: Annotated[int | None, typer.Option(min=1, help="preview this version's first rows")] = None,
    team: TeamOption = None,
    as_json: JsonOption = False,
) -> None:
    """A dataset with its versions, or with --version a preview of that version's first rows."""
    api = client()
    if version is None:
        dataset = api.dataset(name, team=team)
        if as_json:
            print_json(dataset.to_json())
        else:
            _print_dataset(dataset)
        return
    preview = api.dataset_preview(name, version, team=team)
    if as_json:
        print_json(preview.to_json())
    else:
        _print_preview(preview)
