"""Where a task finds its checkpoint: in the source job's folder when this host holds it (the same artifact root,
`<root>/jobs/<job id>/<path>`), else fetched from the platform with the task job's own token."""

from __future__ import annotations

import os
from pathlib import Path

from trainer.spec.task import CheckpointSource

FETCHED_DIR = "source"


def checkpoint_folder(source: CheckpointSource, output_dir: Path) -> Path:
    """`output_dir` is the task job's folder, `<root>/jobs/<task job id>`: its sibling is the source job's."""
    local = output_dir.resolve().parent / str(source.job_id) / source.path
    if local.exists():
        return local
    api_url, token = os.environ.get("SFUMATO_API_URL"), os.environ.get("SFUMATO_JOB_TOKEN")
    if not api_url or not token:
        raise FileNotFoundError(
            f"{local} is not on this host, and no platform is set to fetch artifact "
            f"{source.artifact_id} from (SFUMATO_API_URL, SFUMATO_JOB_TOKEN)"
        )
    from trainer.reporting.artifact_fetch import fetch_artifact

    return fetch_artifact(api_url, token, source.job_id, source.artifact_id, output_dir / FETCHED_DIR)
