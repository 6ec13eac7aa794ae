"""Bucketing several keys' figures onto one step axis, keeping each bucket's minimum, maximum and last point.

The input is a table of "pieces": a block's figures, or single points (a point is a piece whose minimum,
maximum and last are itself). Every key shares the same bucket edges, and a bucket's step is the largest
last step among the keys that have points in it, so all series line up on one axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Pieces:
    """Parallel arrays, one entry per piece."""

    key: np.ndarray  # int: index into the requested keys
    bucket: np.ndarray  # int
    last_step: np.ndarray
    last_value: np.ndarray
    last_wall: np.ndarray
    min_value: np.ndarray
    max_value: np.ndarray

    @classmethod
    def of_points(
        cls, key: np.ndarray, bucket: np.ndarray, step: np.ndarray, value: np.ndarray, wall: np.ndarray
    ) -> Pieces:
        return cls(key, bucket, step, value, wall, value, value)


@dataclass
class Bucketed:
    """The shared axis and, per key, its values there (NaN where the key has no point in the bucket)."""

    steps: np.ndarray
    last: np.ndarray  # (keys, buckets)
    wall: np.ndarray
    low: np.ndarray
    high: np.ndarray


def bucket(pieces: Pieces, key_count: int) -> Bucketed:
    order = np.lexsort((pieces.last_step, pieces.bucket, pieces.key))
    key, buck = pieces.key[order], pieces.bucket[order]
    changed = np.ones(len(key), dtype=bool)
    changed[1:] = (key[1:] != key[:-1]) | (buck[1:] != buck[:-1])
    starts = np.flatnonzero(changed)
    ends = np.append(starts[1:], len(key)) - 1
    axis, column = np.unique(buck[starts], return_inverse=True)
    shape = (key_count, len(axis))
    last, wall, low, high = (np.full(shape, np.nan) for _ in range(4))
    steps = np.full(len(axis), -1, dtype=np.int64)
    rows = key[starts]
    if len(starts):
        last_steps = pieces.last_step[order][ends]
        last[rows, column] = pieces.last_value[order][ends]
        wall[rows, column] = pieces.last_wall[order][ends]
        low[rows, column] = np.minimum.reduceat(pieces.min_value[order], starts)
        high[rows, column] = np.maximum.reduceat(pieces.max_value[order], starts)
        np.maximum.at(steps, column, last_steps)
    return Bucketed(steps=steps, last=last, wall=wall, low=low, high=high)
