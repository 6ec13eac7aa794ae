"""A spec's `dataset:<name>[@<version>][:<split>]` resolved in the job's team at submit, and pinned: the stored
spec names the version the job runs on (`dataset:captions@3:train`), so a retry or a later reader sees the same
rows whatever is uploaded since. An unknown name, version or split is a 422 naming the spec field. Evaluations
take a dataset's prompts too: read from the version's tar and carried in the task, as an uploaded file's are (a
GenEval set's metadata rows the task fetches with its job token, by the pinned reference)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Dataset, DatasetVersion
from server.services.artifact_store import artifact_store
from server.services.dataset_reads import team_version
from server.services.errors import FieldErrors, NotFound
from trainer.spec import JobSpec, SpecError
from trainer.spec.dataset_format import dataset_prompts, split_file
from trainer.spec.dataset_source import DatasetSource, is_dataset_source, parse_dataset_source
from trainer.spec.geneval_options import GENEVAL, carries_geneval_rows, missing_geneval_rows
from trainer.spec.model import IMAGE_FAMILIES


def resolve(session: Session, team_id: int, value: str, field: str) -> tuple[DatasetSource, Dataset, DatasetVersion]:
    """The reference's dataset and version in the team (the latest without a version); 422 naming `field`."""
    try:
        source = parse_dataset_source(value)
        dataset, version = team_version(session, team_id, source.name, source.version)
    except ValueError as exc:
        raise FieldErrors.one(field, str(exc)) from None
    except NotFound as exc:
        raise FieldErrors.one(field, f"{exc.detail}; see GET /api/v1/datasets") from None
    if source.split not in version.rows:
        have = ", ".join(split for split in ("train", "test") if split in version.rows)
        raise FieldErrors.one(
            field, f"version {version.version} of dataset {dataset.name!r} has no {source.split} split ({have})"
        )
    return source, dataset, version


def pin_datasets(session: Session, spec: JobSpec, team_id: int, trains: bool = True) -> None:
    """Write the version into every dataset reference of the spec (prompts.source, prompts.eval_source); an edit
    set goes with a family that takes a conditioning image and only there, and a training job's geneval reward
    with a prompt set that carries GenEval rows (422 naming prompts.source). A task job (`trains` False) runs
    on its own prompts: its source job's training set is only pinned again."""
    prompts = spec.prompts
    if is_dataset_source(prompts.source):
        source, dataset, version = resolve(session, team_id, prompts.source, "prompts.source")
        _check_family(spec.model.family, dataset)
        if trains:
            _check_geneval_rows(spec, dataset)
        prompts.source = source.pinned(version.version)
    elif trains:
        _check_geneval_rows(spec, None)
    if prompts.eval_source is not None:
        source, dataset, version = resolve(session, team_id, prompts.eval_source, "prompts.eval_source")
        if dataset.format == "edit":
            raise FieldErrors.one(
                "prompts.eval_source", "an edit set's eval rows are the test split of prompts.source, with its images"
            )
        prompts.eval_source = source.pinned(version.version)


def _check_geneval_rows(spec: JobSpec, dataset: Dataset | None) -> None:
    """A training job's geneval reward on a prompt set without GenEval rows: a 422 naming prompts.source."""
    if not any(reward.name == GENEVAL for reward in spec.reward):
        return
    carries = carries_geneval_rows(spec.prompts.source) if dataset is None else dataset.format == "geneval"
    if not carries:
        raise FieldErrors.one("prompts.source", missing_geneval_rows(spec.prompts.source))


def _check_family(family: str, dataset: Dataset) -> None:
    edit = dataset.format == "edit"
    if family in IMAGE_FAMILIES and not edit:
        message = (
            f"family {family!r} takes a conditioning image per prompt: name an edit set, not a {dataset.format!r} set"
        )
        raise FieldErrors.one("prompts.source", message)
    if edit and family not in IMAGE_FAMILIES:
        families = ", ".join(sorted(IMAGE_FAMILIES))
        message = f"dataset {dataset.name!r} is an edit set, whose images condition {families}; {family!r} takes text"
        raise FieldErrors.one("prompts.source", message)


def stored_prompts(
    session: Session, settings: Settings, team_id: int, value: str, field: str, max_prompts: int
) -> tuple[str, str, list[str]]:
    """(the pinned reference, the dataset's format, the prompts of its split) for an evaluation, read from the
    stored tar."""
    source, dataset, version = resolve(session, team_id, value, field)
    if dataset.format == "edit":
        raise FieldErrors.one(field, "an evaluation samples text prompts; an edit set's rows need their images")
    member = split_file(dataset.format, source.split)
    chunks = artifact_store(settings).read(version.store_key, 0, version.size_bytes)
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks)), mode="r|") as archive:
        data = next((archive.extractfile(m) for m in archive if m.name == member), None)
        text = data.read().decode("utf-8-sig") if data is not None else ""
    try:
        prompts = dataset_prompts(dataset.format, text, field)
    except SpecError as exc:
        raise FieldErrors.one(field, exc.message) from None
    if len(prompts) > max_prompts:
        raise FieldErrors.one(field, f"{len(prompts)} prompts, over the limit of {max_prompts} an evaluation carries")
    return source.pinned(version.version), dataset.format, prompts


class _ChunkReader(io.RawIOBase):
    """The store's chunks as a file, read forward once (a tar stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._held = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._held:
            self._held = next(self._chunks, b"")
            if not self._held:
                return 0
        size = min(len(buffer), len(self._held))
        buffer[:size], self._held = self._held[:size], self._held[size:]
        return size
