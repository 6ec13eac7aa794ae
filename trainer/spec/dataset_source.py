"""A spec's reference to a prompt set stored on the platform: ``dataset:<name>[@<version>][:<split>]``.

The split is ``train`` unless ``:test`` is given (flow_grpo's train.txt / test.txt). Without a version the platform
pins the latest at submit, so the stored spec always names the version the job ran on."""

from __future__ import annotations

import re
from typing import NamedTuple

from trainer.spec.dataset_format import SPLITS

DATASET_PREFIX = "dataset:"
DATASET_NAME_PATTERN = r"[A-Za-z][A-Za-z0-9._-]{0,99}"
_SOURCE = re.compile(
    rf"^{DATASET_PREFIX}(?P<name>{DATASET_NAME_PATTERN})(?:@(?P<version>[1-9][0-9]{{0,8}}))?(?::(?P<split>[a-z]+))?$"
)
SYNTAX = "dataset:<name>[@<version>][:train|:test]"


class DatasetSource(NamedTuple):
    name: str
    version: int | None
    split: str

    def pinned(self, version: int) -> str:
        """The reference with its version written out, as the platform stores it."""
        return f"{DATASET_PREFIX}{self.name}@{version}:{self.split}"


def is_dataset_source(value: str) -> bool:
    return value.startswith(DATASET_PREFIX)


def parse_dataset_source(value: str) -> DatasetSource:
    """The name, version (None: the latest) and split of a reference; a ValueError saying the syntax otherwise."""
    match = _SOURCE.match(value)
    if not match:
        raise ValueError(f"{value!r} is not {SYNTAX} (a name of letters, digits, '.', '_', '-', from a letter)")
    split = match["split"] or "train"
    if split not in SPLITS:
        raise ValueError(f"{value!r}: no split {split!r}; a split is {' or '.join(SPLITS)}")
    return DatasetSource(match["name"], int(match["version"]) if match["version"] else None, split)
