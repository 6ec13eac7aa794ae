"""A team dataset named by the spec (``dataset:<name>@<version>:<split>``, pinned by the platform at submit) fetched
into the job's own folder before training starts, so no worker host needs the prompt set on its disk.

The job's token reads the version's tar from the platform (GET /api/v1/datasets/<name>/versions/<v>/download, any
dataset of the job's team), checked against its SHA-256 and unpacked into ``<output dir>/datasets/<name>@<v>/``:
the split files under flow_grpo's names (train.txt, test_metadata.jsonl, ...) and an edit set's images. The ranks
of a host share the folder: the first to take the lock fetches, the others find it there. The spec then names the
local split, and every prompt loader reads it as a local prompt set of its format."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from urllib.parse import quote

from trainer.prompt_metadata import geneval_prompts
from trainer.spec import JobSpec
from trainer.spec.dataset_format import DATASET_FORMATS, dataset_prompts, format_of_file, split_file
from trainer.spec.dataset_source import is_dataset_source, parse_dataset_source
from trainer.spec.sections import MAX_EVAL_PROMPTS

FOLDER = "datasets"


def with_local_datasets(spec: JobSpec, output_dir: Path) -> JobSpec:
    """The spec with each dataset reference replaced by its fetched local copy: ``prompts.source`` by the split's
    file (an edit set's train split by its folder, whose test.jsonl gives the eval rows), ``prompts.eval_source``
    by its first MAX_EVAL_PROMPTS prompts in ``prompts.eval``."""
    prompts = spec.prompts
    updates: dict[str, object] = {}
    if is_dataset_source(prompts.source):
        local = local_split(prompts.source, output_dir)
        edit_train = local.name == split_file("edit", "train")
        updates["source"] = str(local.parent if edit_train else local)
    if prompts.eval_source is not None:
        local = local_split(prompts.eval_source, output_dir)
        format = format_of_file(local.name)
        if format == "geneval":  # its rows go to the geneval reward, as a GenEval prompts.source's do
            evaluated = geneval_prompts(local, "prompts.eval_source")
        else:
            evaluated = dataset_prompts(format, local.read_text(encoding="utf-8-sig"), "prompts.eval_source")
        updates["eval"] = evaluated[:MAX_EVAL_PROMPTS]
        updates["eval_source"] = None
    if not updates:
        return spec
    return spec.model_copy(update={"prompts": prompts.model_copy(update=updates)})


def local_split(value: str, output_dir: Path) -> Path:
    """The local file of the reference's split, fetched first when this host does not hold the version."""
    source = parse_dataset_source(value)
    if source.version is None:
        raise ValueError(f"prompts.source: {value!r} names no version; the platform pins one at submit")
    folder = output_dir / FOLDER / f"{source.name}@{source.version}"
    if not folder.is_dir():
        _fetch(source.name, source.version, folder)
    for format in DATASET_FORMATS:
        found = folder / split_file(format, source.split)
        if found.is_file():
            return found
    raise FileNotFoundError(f"{value}: version {source.version} of dataset {source.name!r} has no {source.split} split")


def _fetch(name: str, version: int, folder: Path) -> None:
    api_url, token = os.environ.get("SFUMATO_API_URL"), os.environ.get("SFUMATO_JOB_TOKEN")
    if not api_url or not token:
        raise FileNotFoundError(
            f"dataset {name}@{version} is not in {folder.parent}, and no platform is set to fetch it from "
            "(SFUMATO_API_URL, SFUMATO_JOB_TOKEN)"
        )
    from trainer.reporting.artifact_fetch import fetch_download

    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / ".fetch.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another rank of this host may be fetching it
        if folder.is_dir():
            return
        download = f"/api/v1/datasets/{quote(name)}/versions/{version}/download"
        fetched = fetch_download(api_url, token, download, folder.parent / f".fetch-{name}@{version}.part")
        if fetched != folder:
            raise FileNotFoundError(f"the platform sent {fetched.name} for dataset {name}@{version}")
