"""The queue order of a fair-timing experiment: blocks that cancel out a host's drift.

A block holds one seed's cells for every compared setting (every combination of the other axes), so each
speedup is a ratio of two cells of one block, run minutes apart. Inside a block the settings run in an order
shuffled once with the experiment's recorded seed, and every second block runs them in reverse (native, X,
then X, native): a host that slows down steadily slows the first setting of one block as much as the last of
the next, and the geometric mean of the blocks' ratios cancels it. Without a seed axis there is one block.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from server.services.experiment_matrix import SEED_PATH, Cell, group_key


def blocked_order(cells: Sequence[Cell], order_seed: int) -> list[int]:
    """The cells' indices in queue order: block by block (seeds in axis order), counterbalanced inside."""
    blocks: dict[str, list[Cell]] = {}
    for cell in cells:
        blocks.setdefault(repr(cell.values.get(SEED_PATH)), []).append(cell)
    settings = list(dict.fromkeys(group_key(cell.values) for cell in cells))
    random.Random(order_seed).shuffle(settings)
    rank = {setting: i for i, setting in enumerate(settings)}
    order: list[int] = []
    for number, block in enumerate(blocks.values()):
        ranked = sorted(block, key=lambda cell: rank[group_key(cell.values)], reverse=number % 2 == 1)
        order += [cell.index for cell in ranked]
    return order
