"""A job's metrics as a table file: CSV (standard library) or parquet (pyarrow), one row per step."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Literal, TextIO

from sfumato.errors import MissingDependency, SfumatoError

Format = Literal["csv", "parquet"]
Row = list[float | int | None]


def write_csv(columns: list[str], rows: list[Row], stream: TextIO) -> None:
    """`step,key,...` then one line per step; a key without a point at that step is left empty."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(["" if value is None else value for value in row] for row in rows)


def write_parquet(columns: list[str], rows: list[Row], path: Path) -> None:
    """An int64 `step` column and one float64 column per key (nulls where a key has no point)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependency("parquet export needs pyarrow: pip install 'sfumato[parquet]'") from exc
    arrays = [
        pa.array([row[i] for row in rows], type=pa.int64() if i == 0 else pa.float64()) for i in range(len(columns))
    ]
    pq.write_table(pa.Table.from_arrays(arrays, names=columns), path)


def write_table(columns: list[str], rows: list[Row], path: Path, fmt: Format) -> None:
    try:
        if fmt == "parquet":
            write_parquet(columns, rows, path)
        else:
            with path.open("w", newline="") as stream:
                write_csv(columns, rows, stream)
    except OSError as exc:
        raise SfumatoError(f"cannot write {path}: {exc.strerror or exc}") from exc
