"""A size in bytes as a person writes it ('40GiB', '512 MiB', '1.5GiB', '40GB' or a byte count): the one parser of
the advisor's ``memory_budget`` and the spec's ``resources.memory_budget``."""

from __future__ import annotations

import re

UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9}
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
INT64_MAX = 2**63 - 1  # the most a database column holds


def parse_byte_size(value: str | int) -> int:
    """The size in bytes; ValueError saying what is allowed for a garbled, zero, negative or oversized one."""
    match = SIZE.match(str(value))
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in UNITS or float(match.group(1)) <= 0:
        raise ValueError(f"{value!r} is not a size; give e.g. 40GiB, 512MiB or a byte count")
    size = float(match.group(1)) * UNITS[unit]  # a float first: 400 digits are inf, which int() refuses
    if size > INT64_MAX:
        raise ValueError(f"{value!r} is more than {INT64_MAX} bytes")
    return int(size)
