"""An experiment's matrix: axes (a dotted spec path and its values) expanded into cells, one spec per cell.

A path names a field of the job spec as `trainer.spec` defines it (`seed`, `algorithm.group_size`,
`executor.name`, `reward.0.weight` for a list's entry); a path the spec does not have is refused naming it.
Setting `executor.name` replaces the executor section with that executor's defaults unless the base spec
already names it (executors have different options), and it is applied before the other axes, so
`executor.group_width` can follow it. Setting `algorithm.name` likewise keeps the base's algorithm fields every
algorithm reads alike (steps, group size, learning rate, ...) and drops the ones that are an algorithm's own
(its upstream defaults, its window, its family's options: `ALGORITHM_OWN_FIELDS`), so each cell gets its
algorithm's defaults, never another algorithm's options; it too is applied before the other axes.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from server.services.errors import FieldErrors
from trainer.spec import JobSpec
from trainer.spec.algorithm import ALGORITHM_OPTIONS, UPSTREAM_FIELDS
from trainer.spec.forward_family import FORWARD_ONLY, GRPO_ONLY

EXECUTOR_PATH = "executor.name"
ALGORITHM_PATH = "algorithm.name"
# The algorithm fields that are one algorithm's own: left unset in a cell that changes the algorithm.
ALGORITHM_OWN_FIELDS = frozenset({*UPSTREAM_FIELDS, *GRPO_ONLY, *FORWARD_ONLY, "train_timesteps", "sampler"}).union(
    *ALGORITHM_OPTIONS.values()
)
FIRST_PATHS = (EXECUTOR_PATH, ALGORITHM_PATH)  # set before the other axes, which may set their options
SEED_PATH = "seed"
# Fair timing sets these on every cell; sweeping them would undo it.
FAIR_TIMING_PATHS = ("resources.exclusive", "resources.gpu_model")


@dataclass(frozen=True)
class Axis:
    path: str
    values: list[Any]


@dataclass(frozen=True)
class Cell:
    """One point of the matrix: `index` in matrix order (the first axis varies slowest)."""

    index: int
    values: dict[str, Any]

    def label(self) -> str:
        """`executor.name=jagg, seed=2`: how messages and pages name the cell."""
        return ", ".join(f"{path}={value}" for path, value in self.values.items())


def _models_of(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The spec sections a field of this type may hold, and whether it holds a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    if get_origin(annotation) in (list, tuple):
        return _models_of(get_args(annotation)[0])[0], True
    models: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        models += _models_of(arg)[0]
    return models, False


def path_exists(path: str) -> bool:
    """Whether the job spec has this dotted field (in any executor's options, for `executor.*`)."""
    segments = path.split(".")
    models: list[type[BaseModel]] = [JobSpec]
    i = 0
    while i < len(segments):
        annotations = [m.model_fields[segments[i]].annotation for m in models if segments[i] in m.model_fields]
        if not annotations:
            return False
        if i == len(segments) - 1:
            return True
        models, listed = [], False
        for annotation in annotations:
            found, is_list = _models_of(annotation)
            models += found
            listed |= is_list
        if listed:
            i += 1
            if i == len(segments) or not segments[i].isdigit():
                return False
            if i == len(segments) - 1:
                return True
        i += 1
    return False


def check_axes(axes: Sequence[Axis], fair_timing: bool, max_cells: int) -> None:
    """Every path exists, once, with distinct values; fair timing sweeps nothing it sets; at most `max_cells`."""
    errors: list[dict[str, str]] = []
    seen: set[str] = set()
    for axis in axes:
        field = f"axes.{axis.path}"
        if not path_exists(axis.path):
            errors.append({"field": field, "message": f"the job spec has no field {axis.path!r}"})
        elif axis.path in seen:
            errors.append({"field": field, "message": "each path may be one axis only"})
        elif fair_timing and axis.path in FAIR_TIMING_PATHS:
            message = "fair_timing sets it on every cell (exclusive, one device model); set fair_timing false"
            errors.append({"field": field, "message": message})
        elif len({repr(v) for v in axis.values}) != len(axis.values):
            errors.append({"field": field, "message": "each value may appear once"})
        seen.add(axis.path)
    if errors:
        raise FieldErrors(errors)
    count = cell_count(axes)
    if count > max_cells:
        sizes = " x ".join(str(len(a.values)) for a in axes)
        raise FieldErrors.one("axes", f"{sizes} = {count} cells; at most {max_cells} (SFUMATO_MAX_EXPERIMENT_CELLS)")


def cell_count(axes: Sequence[Axis]) -> int:
    count = 1
    for axis in axes:
        count *= len(axis.values)
    return count


def expand(axes: Sequence[Axis]) -> list[Cell]:
    """Every combination of the axes' values, in matrix order."""
    combos = itertools.product(*(axis.values for axis in axes))
    return [Cell(i, {a.path: v for a, v in zip(axes, combo, strict=True)}) for i, combo in enumerate(combos)]


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path in raw spec data, creating sections as needed; a list entry must exist already."""
    segments = path.split(".")
    node: Any = data
    for depth, segment in enumerate(segments[:-1]):
        if isinstance(node, list):
            index = int(segment)
            if index >= len(node):
                where = ".".join(segments[:depth])
                raise FieldErrors.one(f"axes.{path}", f"the base spec's {where} has {len(node)} entries")
            node = node[index]
            continue
        if not isinstance(node, dict):
            raise FieldErrors.one(f"axes.{path}", f"the base spec's {'.'.join(segments[:depth])} is not a section")
        child = node.get(segment)
        if child is None:
            child = node[segment] = {}
        node = child
    last = segments[-1]
    if isinstance(node, list):
        if int(last) >= len(node):
            raise FieldErrors.one(f"axes.{path}", f"the base spec's list has {len(node)} entries")
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise FieldErrors.one(f"axes.{path}", f"the base spec's {'.'.join(segments[:-1])} is not a section")


def cell_spec(base: dict[str, Any], cell: Cell, name: str) -> dict[str, Any]:
    """The base spec with the cell's values (the executor and the algorithm first), named after the experiment
    and the cell."""
    data = copy.deepcopy(base)
    if isinstance(data.get("executor"), str):
        data["executor"] = {"name": data["executor"]}
    for path, value in sorted(cell.values.items(), key=lambda item: item[0] not in FIRST_PATHS):
        executor, algorithm = data.get("executor"), data.get("algorithm")
        if path == EXECUTOR_PATH and not (isinstance(executor, dict) and executor.get("name") == value):
            data["executor"] = {"name": value}
        elif path == ALGORITHM_PATH and isinstance(algorithm, dict) and algorithm.get("name", "flow_grpo") != value:
            kept = {k: v for k, v in algorithm.items() if k not in ALGORITHM_OWN_FIELDS}
            data["algorithm"] = {**kept, "name": value}
        else:
            _set(data, path, value)
    short = ",".join(str(v) if p in FIRST_PATHS else f"{p.rsplit('.', 1)[-1]}={v}" for p, v in cell.values.items())
    data["name"] = f"{name}/{short}"[:200]
    return data


def group_key(values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Cells that differ only in seed share a key: a cell group."""
    return tuple((path, repr(value)) for path, value in values.items() if path != SEED_PATH)
