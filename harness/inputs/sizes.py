"""Sizes in task files: a number of bytes, or a string with a binary or decimal unit."""

from __future__ import annotations

import re

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B?|B)?\s*\Z", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}
_BINARY = {"ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}


def parse_size(value: object) -> int:
    """Bytes from `1048576`, `"256MiB"`, `"1GiB"`, `"512k"`, `"2MB"`; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string like '256MiB'")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str) and (match := _SIZE.match(value)):
        unit = (match.group(2) or "").lower().removesuffix("b")
        factor = _BINARY.get(unit) or _UNITS.get(unit)
        if factor is None:
            raise ValueError(f"not a size: {value!r} (use bytes or e.g. '256MiB', '1GiB')")
        size = int(float(match.group(1)) * factor)
    else:
        raise ValueError(f"not a size: {value!r} (use bytes or e.g. '256MiB', '1GiB')")
    if size < 0:
        raise ValueError("a size cannot be negative")
    return size
