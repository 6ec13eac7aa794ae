"""`sfumato download`: a job's checkpoint, model or export from the platform, resumed when cut short and checked
against its SHA-256; a folder artifact is unpacked."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sfumato import Artifact
from sfumato.cli.common import client, client_command, err, fail, out, size

# Without --kind, the job's result first: its final model, then its latest checkpoint, then an export.
KIND_ORDER = ("model", "checkpoint", "export", "playground")


class DownloadKind(StrEnum):
    checkpoint = "checkpoint"
    model = "model"
    export = "export"
    playground = "playground"


def choose_artifact(artifacts: list[Artifact], kind: str | None, step: int | None) -> Artifact | None:
    """The artifact `sfumato download` fetches: of `kind` (else the first kind in KIND_ORDER that has one) at
    `step` (else the latest step), among those the platform holds."""
    held = [a for a in artifacts if a.downloadable and (kind is None or a.kind == kind)]
    held = [a for a in held if step is None or a.step == step]
    if not held:
        return None
    return min(held, key=lambda a: (KIND_ORDER.index(a.kind) if a.kind in KIND_ORDER else len(KIND_ORDER),
                                    -(a.step or 0), -a.id))  # fmt: skip


@client_command
def download(
    job_id: Annotated[int, typer.Argument(help="job id")],
    step: Annotated[int | None, typer.Option(help="the artifact of this step (default: the latest)")] = None,
    kind: Annotated[
        DownloadKind | None, typer.Option(help="default: the model if the job has one, else its latest checkpoint")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="folder to download into")] = Path("."),
) -> None:
    """Download a job's checkpoint, model or export (a folder is unpacked into OUT/NAME/)."""
    api = client()
    artifacts = api.artifacts(job_id)
    wanted = kind.value if kind else None
    chosen = choose_artifact(artifacts, wanted, step)
    if chosen is None:
        held = ", ".join(f"{a.kind} {a.name}" + (f" (step {a.step})" if a.step is not None else "")
                         for a in artifacts if a.downloadable) or "none"  # fmt: skip
        what = " ".join(x for x in (wanted or "artifact", f"at step {step}" if step is not None else "") if x)
        raise fail(f"job {job_id} has no downloadable {what}; on the platform: {held}")
    err.print(f"downloading {chosen.kind} {chosen.name} ({size(chosen.size_bytes)}) of job {job_id}", markup=False)
    path = api.download_artifact(job_id, chosen.id, out_dir)
    out.print(str(path), markup=False)
